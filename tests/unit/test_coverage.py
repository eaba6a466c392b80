"""Coverage: rows per criterion, split and breakdown value, the gaps a trainer must see, and the held-out
check packaging relies on."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.finetune.seed import Source
from benchgen.training.coverage import (
    CRITERION_MISSING,
    CRITERION_MISSING_IN_SPLIT,
    MAX_PROBLEMS,
    POOL_OUTNUMBERS_SEED,
    SOURCE_DOMINATES,
    SPLIT_SMALL,
    Gap,
    Thresholds,
    check_held_out,
    coverage,
)
from benchgen.training.examples import HeldOutCase, Kind, PreparedExample, SourceContext, text_hash
from benchgen.training.preparation import criteria_scope, generate
from tests.unit.finetune_inputs import case, forty_wrong_of_fifty, make_env
from tests.unit.preparation_inputs import make_spec, read_examples, read_held_out, run_source

SCOPE = ["arithmetic", "units"]


def row(
    case_id: str,
    split: str,
    *,
    kind: Kind = Kind.SEED,
    variant: int = 0,
    criteria: tuple[str, ...] = ("arithmetic",),
    difficulty: str = "easy",
    prompt: str | None = None,
) -> PreparedExample:
    layer = {Kind.SEED: Source.SEED, Kind.AUGMENTED: Source.AUGMENTED, Kind.POOL: Source.POOL}[kind]
    question = f"Question of {case_id}"
    return PreparedExample(
        example_id=f"{case_id}~{variant:02d}",
        split=split,
        kind=kind,
        variant=variant,
        criteria=list(criteria),
        breakdown={"difficulty": difficulty},
        prompt=prompt or question,
        chosen="Final answer: 1",
        source=SourceContext(case_id=case_id, run_id=None if kind is Kind.POOL else "run-1", layer=layer),
        source_text_hash=text_hash(question),
    )


def clean() -> list[PreparedExample]:
    """20 single-row cases per split, criteria alternating, difficulty by thirds: no gap at all."""
    return [
        row(
            f"{split}-{i:02d}",
            split,
            criteria=(SCOPE[i % 2],),
            difficulty=("easy", "medium", "hard")[i % 3],
        )
        for split in ("train", "validation", "test")
        for i in range(20)
    ]


def kinds_of(gaps: list[Gap]) -> list[tuple[str, str]]:
    return [(gap.kind, gap.subject) for gap in gaps]


def test_a_clean_preparation_has_no_gaps_and_counts_every_view() -> None:
    report = coverage(clean(), scope=SCOPE)
    assert report.gaps == []
    assert report.splits == {"train": 20, "validation": 20, "test": 20}
    assert report.kinds == {"seed": 60, "augmented": 0, "pool": 0}
    assert report.criteria == {
        "arithmetic": {"train": 10, "validation": 10, "test": 10},
        "units": {"train": 10, "validation": 10, "test": 10},
    }
    assert report.breakdowns["difficulty"]["easy"] == {"train": 7, "validation": 7, "test": 7}
    assert report.thresholds == Thresholds(min_split_rows=10, dominant_share=0.1)


def test_a_criterion_in_scope_without_rows_is_a_gap() -> None:
    report = coverage(clean(), scope=[*SCOPE, "geometry"])
    assert kinds_of(report.gaps) == [(CRITERION_MISSING, "geometry")]
    assert report.gaps[0].message == (
        "Criterion 'geometry' has no examples in any split: add runs that got its cases wrong or widen the "
        "selection, or take it out of the scope."
    )


def test_a_criterion_missing_from_one_split_is_a_gap() -> None:
    examples = [e for e in clean() if not (e.split.value == "validation" and e.criteria == ["units"])]
    examples += [row(f"extra-{i}", "validation") for i in range(10)]  # keep validation at 20 rows
    report = coverage(examples, scope=SCOPE)
    assert kinds_of(report.gaps) == [(CRITERION_MISSING_IN_SPLIT, "units")]
    assert report.gaps[0].message == (
        "Criterion 'units' has no validation examples: add runs or cases that exercise it, or give the "
        "validation split a larger share."
    )


def test_a_split_under_the_threshold_is_a_gap() -> None:
    examples = [e for e in clean() if not (e.split.value == "test" and int(e.source.case_id[-2:]) >= 9)]
    report = coverage(examples, scope=SCOPE)
    assert kinds_of(report.gaps) == [(SPLIT_SMALL, "test")]
    assert report.gaps[0].message == (
        "The test split has 9 rows, fewer than 10: add runs or cases, or give the test split a larger share."
    )
    # and a threshold of 9 lets it pass
    assert coverage(examples, scope=SCOPE, thresholds=Thresholds(min_split_rows=9)).gaps == []


def test_a_case_that_dominates_a_split_through_its_augmentations_is_a_gap() -> None:
    # given one train case with four variants: 5 of the 24 train rows, over a tenth
    variants = [row("train-00", "train", kind=Kind.AUGMENTED, variant=v) for v in range(1, 5)]
    report = coverage([*clean(), *variants], scope=SCOPE)
    assert kinds_of(report.gaps) == [(SOURCE_DOMINATES, "train-00")]
    assert report.gaps[0].message == (
        "Case 'train-00' gives 5 of the 24 train rows through its augmentations, more than 10%: lower the "
        "augmentation factor or add runs and cases."
    )
    # and with three variants (4 of 23 rows, still over a tenth) but a share of a fifth, it does not
    three = variants[:3]
    assert coverage([*clean(), *three], scope=SCOPE, thresholds=Thresholds(dominant_share=0.2)).gaps == []


def test_pool_rows_that_outnumber_seed_rows_are_a_gap() -> None:
    pool = [row(f"p{i}", "train", kind=Kind.POOL) for i in range(61)]
    report = coverage([*clean(), *pool], scope=SCOPE)
    assert kinds_of(report.gaps) == [(POOL_OUTNUMBERS_SEED, "pool")]
    assert report.gaps[0].message == (
        "Pool rows (61) outnumber seed rows (60): lower pool_share so that the benchmark's own failures "
        "lead the training."
    )
    assert coverage([*clean(), *pool[:60]], scope=SCOPE).gaps == []


def test_every_gap_message_is_one_sentence_that_says_what_to_do() -> None:
    variants = [row("train-00", "train", kind=Kind.AUGMENTED, variant=v) for v in range(1, 40)]
    pool = [row(f"p{i}", "test", kind=Kind.POOL) for i in range(70)]
    examples = [e for e in clean() if e.split.value != "validation"] + variants + pool
    report = coverage(examples, scope=[*SCOPE, "geometry"])
    assert {gap.kind for gap in report.gaps} == {
        CRITERION_MISSING,
        CRITERION_MISSING_IN_SPLIT,
        SPLIT_SMALL,
        SOURCE_DOMINATES,
        POOL_OUTNUMBERS_SEED,
    }
    for gap in report.gaps:
        assert gap.message.endswith(".") and ". " not in gap.message
        assert any(verb in gap.message for verb in ("add ", "lower ", "give ", "take "))


def test_held_out_check_is_clean_on_a_generated_preparation_and_names_leaks(tmp_path: Path) -> None:
    env = make_env(tmp_path / "env", finetune={})
    generate(make_spec(), env, [run_source(tmp_path, "run-1", forty_wrong_of_fifty())], tmp_path / "prep")
    examples = read_examples(tmp_path / "prep")
    held = read_held_out(tmp_path / "prep")
    assert check_held_out(examples, held) == []
    # given one train row from a held-out case and one repeating a held-out question under another id
    leaked = row(held[0].case_id, "train")
    copied = row("other", "validation", prompt=case(int(held[1].case_id[4:]))["question"].lower())
    assert check_held_out([*examples, leaked, copied], held) == [
        f"train row '{held[0].case_id}~00' comes from held-out case '{held[0].case_id}'",
        "validation row 'other~00' repeats the text of a held-out case",
    ]


def test_held_out_check_names_the_first_rows_and_counts_the_rest() -> None:
    held = [HeldOutCase(case_id="h", text_hash=text_hash("q"))]
    rows = [row(f"c{i}", "train", prompt="Q") for i in range(MAX_PROBLEMS + 7)]
    problems = check_held_out(rows, held)
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == "and 7 more rows like these"


@pytest.mark.parametrize("fields", [{"min_split_rows": -1}, {"dominant_share": 0}, {"dominant_share": 1.5}])
def test_thresholds_out_of_range_are_refused(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"greater than|less than"):
        Thresholds.model_validate(fields)


def test_the_scope_coverage_reads_is_the_spec_criteria_or_all_of_the_environment(tmp_path: Path) -> None:
    env = make_env(tmp_path / "env", finetune={}, criteria=[{"id": "arithmetic"}, {"id": "units"}])
    assert criteria_scope(make_spec(), env) == ["arithmetic", "units"]
    assert criteria_scope(make_spec(criteria=["units"]), env) == ["units"]
