"""Coverage of a preparation: how its rows spread over criteria, splits and the environment's breakdown
fields, and the gaps a trainer must see before training on it.

Both functions read the examples once, as a stream (the examples file, line by line). Memory grows only
with the number of distinct criteria, breakdown values and source cases, never with the rows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from pydantic import ConfigDict, Field

from benchgen.finetune.split import SPLITS, Split
from benchgen.lazy_model import LazyModel
from benchgen.training.examples import HeldOutCase, Kind, PreparedExample, text_hash

CRITERION_MISSING = "criterion_missing"
CRITERION_MISSING_IN_SPLIT = "criterion_missing_in_split"
SPLIT_SMALL = "split_small"
SOURCE_DOMINATES = "source_dominates"
POOL_OUTNUMBERS_SEED = "pool_outnumbers_seed"
MAX_PROBLEMS = 50  # check_held_out names this many rows, then counts the rest


class Thresholds(LazyModel):
    """Where a number becomes a gap.

    - ``min_split_rows`` = 10: OpenAI-compatible fine-tuning refuses a training file of fewer than 10
      examples, and under 10 validation or test rows one row moves the measured rate by more than ten
      points, so the split says nothing a trainer can rely on.
    - ``dominant_share`` = 0.1: a source case whose rows (its seed and augmentations) make more than a tenth
      of a training split puts that one problem in front of the model one step in ten; with the default
      factor of 5 that happens only below 50 rows, where the split is too small anyway, so the flag marks
      a factor that outgrew the cases rather than ordinary augmentation.
    """

    model_config = ConfigDict(frozen=True)

    min_split_rows: int = Field(default=10, ge=0)
    dominant_share: float = Field(default=0.1, gt=0.0, le=1.0)


DEFAULT_THRESHOLDS = Thresholds.model_construct()


class Gap(LazyModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    subject: str  # the criterion, split, source case id, or "pool"
    message: str  # one sentence that says what to do


class Coverage(LazyModel):
    splits: dict[str, int]
    kinds: dict[str, int]
    criteria: dict[str, dict[str, int]]  # criterion -> split -> rows
    breakdowns: dict[str, dict[str, dict[str, int]]]  # field -> value -> split -> rows
    gaps: list[Gap]
    thresholds: Thresholds


def _per_split() -> dict[str, int]:
    return {split.value: 0 for split in SPLITS}


def _criterion_gaps(criteria: dict[str, dict[str, int]]) -> list[Gap]:
    gaps: list[Gap] = []
    for criterion, splits in criteria.items():
        if not any(splits.values()):
            gaps.append(
                Gap(
                    kind=CRITERION_MISSING,
                    subject=criterion,
                    message=f"Criterion '{criterion}' has no examples in any split: add runs that got its "
                    "cases wrong or widen the selection, or take it out of the scope.",
                )
            )
            continue
        for split, rows in splits.items():
            if not rows:
                gaps.append(
                    Gap(
                        kind=CRITERION_MISSING_IN_SPLIT,
                        subject=criterion,
                        message=f"Criterion '{criterion}' has no {split} examples: add runs or cases that "
                        f"exercise it, or give the {split} split a larger share.",
                    )
                )
    return gaps


def _split_gaps(splits: dict[str, int], thresholds: Thresholds) -> list[Gap]:
    return [
        Gap(
            kind=SPLIT_SMALL,
            subject=split,
            message=f"The {split} split has {rows} rows, fewer than {thresholds.min_split_rows}: add runs "
            f"or cases, or give the {split} split a larger share.",
        )
        for split, rows in splits.items()
        if rows < thresholds.min_split_rows
    ]


def _dominance_gaps(
    per_case: dict[str, Counter[str]], splits: dict[str, int], thresholds: Thresholds
) -> list[Gap]:
    gaps: list[Gap] = []
    for split in (Split.TRAIN.value, Split.VALIDATION.value):
        total = splits[split]
        for case_id, rows in sorted(per_case[split].items()):
            if rows > 1 and rows > thresholds.dominant_share * total:
                gaps.append(
                    Gap(
                        kind=SOURCE_DOMINATES,
                        subject=case_id,
                        message=f"Case '{case_id}' gives {rows} of the {total} {split} rows through its "
                        f"augmentations, more than {thresholds.dominant_share:.0%}: lower the augmentation "
                        "factor or add runs and cases.",
                    )
                )
    return gaps


def coverage(
    examples: Iterable[PreparedExample], *, scope: Sequence[str], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> Coverage:
    """Rows per split, kind, criterion and breakdown value, and the gaps.

    ``scope`` is the criteria the preparation covers: the spec's, or all of the environment's when the spec
    names none. A row counts for every criterion of its own that is in the scope.
    """
    splits = _per_split()
    kinds = {kind.value: 0 for kind in Kind}
    criteria = {criterion: _per_split() for criterion in dict.fromkeys(scope)}
    breakdowns: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    per_case: dict[str, Counter[str]] = defaultdict(Counter)
    for example in examples:
        split = example.split.value
        splits[split] += 1
        kinds[example.kind.value] += 1
        for criterion in dict.fromkeys(example.criteria):
            if criterion in criteria:
                criteria[criterion][split] += 1
        for name, value in example.breakdown.items():
            breakdowns[name].setdefault(value, _per_split())[split] += 1
        if example.kind is not Kind.POOL:
            per_case[split][example.source.case_id] += 1
    gaps = [
        *_criterion_gaps(criteria),
        *_split_gaps(splits, thresholds),
        *_dominance_gaps(per_case, splits, thresholds),
    ]
    pool, seeds = kinds[Kind.POOL.value], kinds[Kind.SEED.value]
    if pool > seeds:
        gaps.append(
            Gap(
                kind=POOL_OUTNUMBERS_SEED,
                subject="pool",
                message=f"Pool rows ({pool}) outnumber seed rows ({seeds}): lower pool_share so that the "
                "benchmark's own failures lead the training.",
            )
        )
    return Coverage(
        splits=splits,
        kinds=kinds,
        criteria=criteria,
        breakdowns={name: dict(sorted(values.items())) for name, values in sorted(breakdowns.items())},
        gaps=gaps,
        thresholds=thresholds,
    )


def check_held_out(examples: Iterable[PreparedExample], held_out: Iterable[HeldOutCase]) -> list[str]:
    """What is wrong: each train or validation row whose case id or text is a held-out case's (empty when
    clean). The first ``MAX_PROBLEMS`` rows are named, the rest counted in a last line."""
    ids: set[str] = set()
    hashes: set[str] = set()
    for case in held_out:
        ids.add(case.case_id)
        hashes.add(case.text_hash)
    problems: list[str] = []
    more = 0
    for example in examples:
        if example.split is Split.TEST:
            continue
        where = f"{example.split.value} row '{example.example_id}'"
        if example.source.case_id in ids:
            problem = f"{where} comes from held-out case '{example.source.case_id}'"
        elif text_hash(example.prompt) in hashes or example.source_text_hash in hashes:
            problem = f"{where} repeats the text of a held-out case"
        else:
            continue
        if len(problems) < MAX_PROBLEMS:
            problems.append(problem)
        else:
            more += 1
    if more:
        problems.append(f"and {more} more rows like these")
    return problems
