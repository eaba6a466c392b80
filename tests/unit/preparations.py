"""Preparation folders written directly from prepared examples, for the package and profile tests."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchgen.finetune.seed import Source, VerdictSummary
from benchgen.finetune.split import SPLITS, Split
from benchgen.training.examples import (
    EXAMPLES_NAME,
    HELD_OUT_NAME,
    HeldOutCase,
    Kind,
    PreparedExample,
    SourceContext,
    text_hash,
)
from benchgen.training.package import PackageReport, PreparationInfo, build_package
from benchgen.vocabulary import Method

SYSTEM = "You are a careful maths tutor."
GRADING: dict[str, Any] = {"template": "math", "answer": "19", "criteria": ["arithmetic"]}
HYPERPARAMS: dict[str, float | int | str] = {"learning_rate": 2e-4, "epochs": 2}


def question(case_id: str) -> str:
    # The id recurs so that every 13 words of one case's question hold it: cases share no 13-gram.
    return (
        f"Case {case_id}: a farmer in village {case_id} has 12 sheep and buys 7 more; how many sheep does "
        f"farm {case_id} have now?"
    )


def example(
    case_id: str,
    split: Split,
    *,
    variant: int = 0,
    kind: Kind = Kind.SEED,
    prompt: str | None = None,
    chosen: str = "12 + 7 = 19.\n\nFinal answer: 19",
    rejected: str | None = "The answer is 18.",
    system: str = SYSTEM,
    source_question: str | None = None,
    grading: dict[str, Any] | None = None,
) -> PreparedExample:
    """One example of case ``case_id``; its prompt defaults to the case's question."""
    text = prompt if prompt is not None else question(case_id)
    layer = Source.POOL if kind is Kind.POOL else Source.AUGMENTED if variant else Source.SEED
    return PreparedExample(
        example_id=f"{case_id}~{variant:02d}",
        split=split,
        kind=kind,
        variant=variant,
        criteria=["arithmetic"],
        breakdown={"difficulty": "easy"},
        system=system,
        prompt=text,
        chosen=chosen,
        rejected=rejected,
        grading=grading,
        source=SourceContext(
            case_id=case_id,
            run_id=None if kind is Kind.POOL else "run-1",
            layer=layer,
            response=rejected,
            verdict=None
            if kind is Kind.POOL
            else VerdictSummary(passed=False, answered=True, prediction="18"),
        ),
        source_text_hash=text_hash(source_question if source_question is not None else question(case_id)),
    )


def held(case_id: str, text: str | None = None) -> HeldOutCase:
    return HeldOutCase(case_id=case_id, text_hash=text_hash(text if text is not None else question(case_id)))


def write_preparation(
    folder: Path, examples: Iterable[PreparedExample], held_out: Iterable[HeldOutCase]
) -> Path:
    """``folder`` with examples.jsonl (by split rank, then example id) and held_out.jsonl (by case id)."""
    folder.mkdir(parents=True, exist_ok=True)
    rank = {split: position for position, split in enumerate(SPLITS)}
    ordered = sorted(examples, key=lambda e: (rank[e.split], e.example_id))
    with (folder / EXAMPLES_NAME).open("w", encoding="utf-8") as stream:
        stream.writelines(e.model_dump_json() + "\n" for e in ordered)
    with (folder / HELD_OUT_NAME).open("w", encoding="utf-8") as stream:
        stream.writelines(c.model_dump_json() + "\n" for c in sorted(held_out, key=lambda c: c.case_id))
    return folder


def environment_cases(prep: Path) -> list[tuple[str, str]]:
    """The environment's ``(case id, question)`` of a preparation written here: every held-out case with
    its :func:`question`."""
    lines = (prep / HELD_OUT_NAME).read_text(encoding="utf-8").splitlines()
    return [(case.case_id, question(case.case_id)) for case in map(HeldOutCase.model_validate_json, lines)]


def package_of(
    prep: Path,
    info: PreparationInfo,
    profile: str,
    out: Path,
    *,
    cases: Iterable[tuple[str, str]] | None = None,
) -> PackageReport:
    """The package of ``prep``, its environment's cases :func:`environment_cases` unless given."""
    return build_package(prep, info, profile, out, cases=environment_cases(prep) if cases is None else cases)


def standard(
    folder: Path,
    *,
    train: int = 12,
    validation: int = 2,
    test: int = 2,
    extra_held_out: int = 3,
    grading: dict[str, Any] | None = None,
) -> Path:
    """A clean preparation: ``train`` + ``validation`` + ``test`` cases with one seed example each (with
    ``grading``, a reinforcement one); the test cases and ``extra_held_out`` cases the model passed (no
    example) are held out."""
    examples = [example(f"t{n:03d}", Split.TRAIN, grading=grading) for n in range(train)]
    examples += [example(f"v{n:03d}", Split.VALIDATION, grading=grading) for n in range(validation)]
    examples += [example(f"h{n:03d}", Split.TEST, grading=grading) for n in range(test)]
    held_out = [held(f"h{n:03d}") for n in range(test + extra_held_out)]
    return write_preparation(folder, examples, held_out)


def info(method: Method = Method.DEMONSTRATION, state_hash: str = "ab" * 32) -> PreparationInfo:
    return PreparationInfo(
        state_hash=state_hash,
        method=method,
        environment_id="gsm8k-en",
        environment_version="v1",
        benchmark="GSM8K-EN",
        base_model="qwen2.5-7b",
        suggested_hyperparams=HYPERPARAMS,
        spec={"method": method.value, "criteria": [], "run_ids": ["run-1"]},
    )
