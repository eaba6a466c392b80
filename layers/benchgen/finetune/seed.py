"""Seed and pool examples: one per selected case or pool row, with a target written from the gold answer.

The target is a short reasoning plus the gold final answer. It is never the model's prediction: the model's
own wrong output is kept apart, as ``rejected``, for preference rows. Which judged cases become examples,
and in which layer, is ``select``'s to say (``selections`` over a run's verdict lines).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import msgspec
from pydantic import ConfigDict, Field

from benchgen.bundle.spec import SelectionCriterion
from benchgen.cases import CaseText
from benchgen.errors import BundleError
from benchgen.lazy_model import LazyModel
from benchgen.verdicts import Verdict, read_verdicts


class Source(StrEnum):
    """The layer an example comes from."""

    SEED = "seed"
    AUGMENTED = "augmented"
    POOL = "pool"
    NEAR_MISS = "near_miss"
    PASSED = "passed"


LAYERS = tuple(Source)

Selection = tuple[str, Source, bytes]  # case id, the layer it joins, its verdicts.jsonl line

DEFAULT_TARGET_TEMPLATES = {
    "en": "{reasoning}\n\nFinal answer: {answer}",
    "tr": "{reasoning}\n\nCevap: {answer}",
}
# Used when a case has no worked solution: a neutral lead-in, so the target still reads as reasoning + answer.
DEFAULT_REASONING = {
    "en": "Working through the question step by step gives the result below.",
    "tr": "Soruyu adım adım çözünce aşağıdaki sonuca ulaşılır.",
}
MAX_SENTENCES = 4
MAX_REASONING_CHARS = 600

_CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")  # GSM8K-style inline calculator annotations
_FINAL_LINE = re.compile(r"^\s*####.*$", re.MULTILINE)  # GSM8K-style "#### 72" answer line
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class VerdictSummary(LazyModel):
    """What the judge said about the source case."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    answered: bool | None  # None: the scoring did not say whether it could read an answer
    prediction: str | None


class Example(LazyModel):
    """One training example and where it came from."""

    model_config = ConfigDict(frozen=True)

    example_id: str
    case_id: str
    run_id: str
    source: Source
    variant: int = 0
    input: str
    target: str
    system: str = ""
    rejected: str | None = None  # the model's own wrong output, when it gave one
    verdict: VerdictSummary | None = None  # None for pool rows: no judge saw them
    criteria: list[str] = Field(default_factory=list)

    @property
    def split_key(self) -> str:
        """The id whose hash places this example: every variant of a case shares it."""
        return pool_key(self.case_id) if self.source is Source.POOL else self.case_id


class Judged(Protocol):
    """What the artifact reads of a verdict: the pydantic model or the lean ``verdicts.VerdictRecord``."""

    @property
    def passed(self) -> bool: ...
    @property
    def near_miss(self) -> bool: ...
    @property
    def unjudged(self) -> str | msgspec.UnsetType | None: ...
    @property
    def prediction(self) -> str | None: ...
    @property
    def raw_prediction(self) -> str: ...
    @property
    def question(self) -> str: ...
    @property
    def gold(self) -> str: ...
    @property
    def solution(self) -> str | None: ...


def select(verdict: Judged, criterion: SelectionCriterion) -> Source | None:
    """The layer a judged case joins under ``criterion``, or None when it is left out (always, when the
    case could not be judged: it is neither a mistake nor a success)."""
    if isinstance(verdict.unjudged, str):
        return None
    if not verdict.passed:
        return Source.SEED
    if criterion is SelectionCriterion.ALL_ITEMS:
        return Source.PASSED
    if criterion is SelectionCriterion.FAILED_AND_NEAR_MISS and verdict.near_miss:
        return Source.NEAR_MISS
    return None


def selections(
    lines: Iterable[bytes],
    criterion: SelectionCriterion,
    *,
    wanted: Callable[[Verdict], bool] | None = None,
) -> Iterator[Selection]:
    """Each verdict line that selects its case (and that ``wanted`` accepts), with the layer it joins; the
    rest are read and dropped."""
    for verdict, line in read_verdicts(lines, Verdict.model_validate_json):
        source = select(verdict, criterion)
        if source is not None and (wanted is None or wanted(verdict)):
            yield verdict.case_id, source, line


def example_id(case_id: str, variant: int) -> str:
    return f"{case_id}~{variant:02d}"


_VARIANT_SUFFIX = re.compile(r"~\d{2,}\Z")


def source_case_id(case_id: str) -> str:
    """The case an :func:`example_id` was made from; any other id is its own source case."""
    return _VARIANT_SUFFIX.sub("", case_id)


def short_reasoning(solution: str | None, language: str) -> str:
    """The first few sentences of a worked solution, cleaned; a neutral sentence when there is none."""
    text = _FINAL_LINE.sub("", _CALCULATOR_NOTE.sub("", solution or ""))
    text = " ".join(text.split())
    if not text:
        return DEFAULT_REASONING.get(language, DEFAULT_REASONING["en"])
    sentences = _SENTENCE_END.split(text)
    short = " ".join(sentences[:MAX_SENTENCES])
    if len(short) > MAX_REASONING_CHARS:
        cut = short[:MAX_REASONING_CHARS].rsplit(" ", 1)[0]
        short = cut.rstrip(",;:") + " …"
    return short


def target_template(templates: dict[str, str], language: str) -> str:
    return templates.get(language) or DEFAULT_TARGET_TEMPLATES.get(language) or DEFAULT_TARGET_TEMPLATES["en"]


def write_target(template: str, *, reasoning: str, answer: str) -> str:
    # Plain replacement rather than str.format: templates may hold braces (LaTeX, JSON) of their own.
    return template.replace("{reasoning}", reasoning).replace("{answer}", answer).strip()


def rejected_output(verdict: Judged) -> str | None:
    """The model's own output for a case it got wrong; None when it passed or said nothing."""
    if verdict.passed:
        return None
    text = verdict.raw_prediction.strip() or (verdict.prediction or "").strip()
    return text or None


def seed_example(
    verdict: Verdict,
    text: CaseText,
    *,
    source: Source,
    run_id: str,
    template: str,
    language: str,
    system: str,
    default_criteria: list[str],
) -> Example:
    """The example a selected case becomes: its question in, reasoning + gold answer out."""
    target = write_target(template, reasoning=short_reasoning(text.solution, language), answer=text.answer)
    criteria = [result.id for result in verdict.criteria] or list(default_criteria)
    return Example(
        example_id=example_id(verdict.case_id, 0),
        case_id=verdict.case_id,
        run_id=run_id,
        source=source,
        variant=0,
        input=text.question,
        target=target,
        system=system,
        rejected=rejected_output(verdict),
        verdict=VerdictSummary(
            passed=verdict.passed, answered=verdict.answered, prediction=verdict.prediction
        ),
        criteria=criteria,
    )


def case_text(verdict: Judged, reference: CaseText | None) -> CaseText | None:
    """The reference case's text, falling back to what the verdict recorded; None without a question."""
    question = (reference.question if reference else "") or verdict.question
    answer = (reference.answer if reference else "") or verdict.gold
    solution = (reference.solution if reference else None) or verdict.solution
    if not question.strip():
        return None
    return CaseText(question=question, answer=answer, solution=solution)


def _pool_files(path: Path) -> list[Path]:
    return sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]


def pool_rows(path: Path) -> Iterator[tuple[str, bytes]]:
    """``(row id, line)`` per pool row with a question, in file order; a row without ``id`` is named by file
    and line. Repeated ids are all yielded: the choice keeps the first (``store.choose_pool_rows``).
    """
    for file in _pool_files(path):
        with file.open("rb") as stream:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise BundleError(
                        file.name, f"line {number} is not valid JSON; write one pool row object a line"
                    ) from exc
                if not isinstance(row, dict) or not str(row.get("question") or "").strip():
                    continue
                yield (str(row["id"]) if row.get("id") is not None else f"{file.name}:{number}"), line


def pool_key(row_id: str) -> str:
    """The split key of a pool row: its own id, kept apart from case ids."""
    return f"pool:{row_id}"


def pool_rank(row_id: str, seed: int = 0) -> str:
    """Where a pool row stands in the choice: the rows whose ids hash lowest are taken first.

    A seed other than 0 is mixed into the hash, so it chooses another slice of the pool; 0 keeps the run
    artifact's choice.
    """
    key = pool_key(row_id) if seed == 0 else f"{pool_key(row_id)}\x1f{seed}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def pool_count(share: float, seeds: int) -> int:
    """How many pool rows a ``share`` of ``seeds`` seed rows asks for."""
    # Half up rather than Python's round-half-even, so a share of 0.5 of 5 seeds gives 3 rows.
    return math.floor(share * seeds + 0.5)


def pool_example(
    row_id: str, row: dict[str, Any], *, run_id: str, template: str, language: str, system: str
) -> Example:
    """The example a chosen pool row becomes: its question in, reasoning + its answer out."""
    solution = row.get("solution")
    reasoning = short_reasoning(solution if isinstance(solution, str) else None, language)
    criteria = row.get("criteria")
    return Example(
        example_id=f"pool~{row_id}",
        case_id=row_id,
        run_id=run_id,
        source=Source.POOL,
        input=str(row["question"]),
        target=write_target(template, reasoning=reasoning, answer=str(row.get("answer") or "")),
        system=system,
        criteria=[c for c in criteria if isinstance(c, str)] if isinstance(criteria, list) else [],
    )
