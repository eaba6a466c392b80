"""A rubric's judging prompt and the strict reading of a grading model's answer, standard library only.

The template that grades answers against a rubric (its case's ``rubric`` and ``reference``) uses these
functions through its own module's names; the standalone grader (:mod:`benchgen.scoring.grader`) is
amalgamated from this module too, so that a completion rewarded where BenchGen is not installed is asked
about with the same prompt text, read with the same parse and scored with the same weighted mean as a run's
verdict. A criterion here is anything with ``id``, ``description``, ``scale`` and ``weight``
(:class:`RubricEntry`); :class:`RubricLine` is the plain one a grader builds from a case's grading fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from benchgen.scoring.reasoning import answer_text

REASON_LIMIT = 300
SCALE_LIMIT = 100  # the widest scale a criterion may have: high - low
PROMPT_FIELDS = ("question", "answer", "reference", "rubric")
# How many times the grading model is asked about one answer: once, and once more when its answer cannot be
# read (benchgen.judging asks a run's grading model as many times).
ASKED_TIMES = 2
CUT_OFF_REPLY = "the reply ended inside its reasoning block, with no JSON object after it."
_REPLY_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL)

DEFAULT_PROMPT = """You are grading an answer to a question against a rubric.

Question:
{question}

Reference answer (a good answer, not the only one):
{reference}

Answer to grade:
{answer}

Rubric: score the answer on each criterion.
{rubric}"""

NO_REFERENCE = "(none given)"


class RubricEntry(Protocol):
    """What the prompt and the parse read of one criterion of a rubric."""

    @property
    def id(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def scale(self) -> tuple[int, int]: ...
    @property
    def weight(self) -> float: ...


@dataclass(frozen=True)
class RubricLine:
    """One criterion of a rubric as a case's grading fields carry it."""

    id: str
    description: str
    scale: tuple[int, int] = (0, 1)
    weight: float = 1.0


@dataclass(frozen=True)
class CriterionScore:
    """The grading model's score of one criterion, and its reason."""

    id: str
    score: int
    reason: str


def rubric_lines(items: Any) -> list[RubricLine]:
    """The criteria of a rubric given as JSON (a list of objects with ``id``, ``description`` and optionally
    ``scale`` [low, high] and ``weight``); ValueError saying what is wrong."""
    if not isinstance(items, list) or not items:
        raise ValueError("a rubric is a non-empty list of criteria, each with id and description")
    lines = []
    for item in items:
        if not isinstance(item, Mapping):
            raise ValueError("each criterion of a rubric is an object with id and description")
        name, description = item.get("id"), item.get("description")
        scale, weight = item.get("scale", [0, 1]), item.get("weight", 1.0)
        if not isinstance(name, str) or not name or not isinstance(description, str) or not description:
            raise ValueError("each criterion of a rubric needs an id and a description, both strings")
        if (
            not isinstance(scale, list | tuple)
            or len(scale) != 2
            or not all(isinstance(end, int) and not isinstance(end, bool) for end in scale)
            or not 0 < scale[1] - scale[0] <= SCALE_LIMIT
        ):
            raise ValueError(f"criterion {name!r}: its scale is two integers [low, high], going up")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
            raise ValueError(f"criterion {name!r}: its weight is a number above 0")
        lines.append(RubricLine(name, description, (scale[0], scale[1]), float(weight)))
    if len({line.id for line in lines}) != len(lines):
        raise ValueError("the rubric names a criterion more than once")
    return lines


def place(criterion: RubricEntry, score: int) -> float:
    """``score``'s place on the criterion's scale, from 0 (its lowest) to 1 (its highest)."""
    low, high = criterion.scale
    return (score - low) / (high - low)


def described(criterion: RubricEntry) -> str:
    """The criterion as the judging prompt lists it."""
    low, high = criterion.scale
    if (low, high) == (0, 1):
        how = "score 1 if the answer meets it, 0 if it does not"
    else:
        how = f"score an integer from {low} (worst) to {high} (best)"
    return f"- {criterion.id}: {criterion.description} ({how})"


def rubric_answer_form(rubric: Sequence[RubricEntry]) -> str:
    """The form the grading model must answer in, added after every judging prompt."""
    example = {"criteria": [{"id": c.id, "score": c.scale[1], "reason": "one sentence"} for c in rubric]}
    return (
        "Reply with only a JSON object, no other text, in this form, one entry per criterion in the order "
        "above, each score an integer on that criterion's scale and each reason one sentence:\n"
        + json.dumps(example, ensure_ascii=False)
    )


def rubric_prompt(
    prompt: str | None,
    question: str,
    answer: str,
    reference: str | None,
    rubric: Sequence[RubricEntry],
    problem: str | None = None,
) -> str:
    """The grading model's prompt about ``answer``: ``prompt`` (the environment's, or the default when None)
    with the case's fields, then the answer form; when ``problem`` is given, what was wrong with its last
    answer."""
    fields = {
        "question": question,
        "answer": answer,
        "reference": reference or NO_REFERENCE,
        "rubric": "\n".join(described(criterion) for criterion in rubric),
    }
    text = (prompt or DEFAULT_PROMPT).format_map(fields) + "\n\n" + rubric_answer_form(rubric)
    if problem is not None:
        text += f"\n\nYour last reply could not be read: {problem} Reply again with only the JSON object."
    return text


def reply_body(text: str) -> str | None:
    """What of a judge's reply is read: the text after its reasoning block (a judge that reasons writes one
    before answering), out of one Markdown fence when it is in one; None when it ended inside the block."""
    answer = answer_text(text)
    if answer is None:
        return None
    stripped = answer.strip()
    fenced = _REPLY_FENCE.match(stripped)
    return fenced.group("body").strip() if fenced else stripped


def _criterion_entry(item: Any, rubric: Mapping[str, RubricEntry]) -> CriterionScore | str:
    if not isinstance(item, dict) or set(item) != {"id", "score", "reason"}:
        return 'each entry of "criteria" must be an object with exactly "id", "score" and "reason".'
    name, score, reason = item["id"], item["score"], item["reason"]
    if not isinstance(name, str) or name not in rubric:
        return f"{json.dumps(name)} is not a criterion of the rubric ({', '.join(rubric)})."
    low, high = rubric[name].scale
    if isinstance(score, bool) or not isinstance(score, int) or not low <= score <= high:
        return f'the score of "{name}" must be an integer from {low} to {high}, not {json.dumps(score)}.'
    if not isinstance(reason, str) or not reason.strip() or "\n" in reason.strip():
        return f'the reason for "{name}" must be one sentence on one line.'
    if len(reason) > REASON_LIMIT:
        return f'the reason for "{name}" is longer than {REASON_LIMIT} characters.'
    return CriterionScore(name, score, reason.strip())


def read_rubric_scores(text: str, rubric: Sequence[RubricEntry]) -> list[CriterionScore] | str:
    """The scores of ``rubric``'s criteria in rubric order, read strictly from the grading model's answer
    ``text``; a string saying what is wrong when the answer cannot be read."""
    body = reply_body(text)
    if body is None:
        return CUT_OFF_REPLY
    try:
        data = json.loads(body)
    except ValueError:
        return "the reply is not one JSON object."
    if not isinstance(data, dict) or set(data) != {"criteria"} or not isinstance(data["criteria"], list):
        return 'the reply must be a JSON object with one key, "criteria", holding a list.'
    by_id = {criterion.id: criterion for criterion in rubric}
    scores: dict[str, CriterionScore] = {}
    for item in data["criteria"]:
        entry = _criterion_entry(item, by_id)
        if isinstance(entry, str):
            return entry
        if entry.id in scores:
            return f'"{entry.id}" is scored more than once.'
        scores[entry.id] = entry
    missing = [name for name in by_id if name not in scores]
    if missing:
        return f"no score is given for {', '.join(missing)}."
    return [scores[name] for name in by_id]


def rubric_score(rubric: Sequence[RubricEntry], scores: Sequence[CriterionScore]) -> float:
    """The weighted mean of the criteria's places on their scales."""
    by_id = {criterion.id: criterion for criterion in rubric}
    total = sum(criterion.weight for criterion in rubric)
    return sum(by_id[s.id].weight * place(by_id[s.id], s.score) for s in scores) / total
