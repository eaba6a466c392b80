"""The comparison report built from two runs' verdicts: pairing, counts, subgroups and the verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.compare.report import (
    NOT_ESTABLISHED,
    NOT_HELD_OUT,
    Comparison,
    Conclusion,
    NoPairedCases,
    compare_runs,
)
from benchgen.compare.selection import PackageRef
from benchgen.errors import ScoringError
from benchgen.verdicts import CriterionResult
from benchgen.zipwrite import write_zip
from tests.unit.compare_inputs import AFTER, BEFORE, outcomes, scoring_output, table, verdict


def _compare(
    tmp_path: Path,
    before: dict[str, bool],
    after: dict[str, bool],
    *,
    cases: list[str] | None = None,
    package: PackageRef | None = None,
) -> Comparison:
    return compare_runs(
        BEFORE,
        outcomes(tmp_path / "before.zip", before),
        AFTER,
        outcomes(tmp_path / "after.zip", after),
        cases=cases,
        package=package,
        resamples=200,
    )


def test_twelve_fixed_against_two_broken_is_an_improvement(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, *table(fixed=12, broken=2, same_pass=33, same_fail=3))

    assert comparison.paired_cases == 50
    assert (comparison.accuracy_before, comparison.accuracy_after) == (0.7, 0.9)
    assert comparison.difference == pytest.approx(0.2)
    assert (comparison.fixed_count, comparison.broken_count) == (12, 2)
    assert (comparison.both_passed, comparison.both_failed) == (33, 3)
    # P[X <= 2], X ~ Bin(14, 1/2) = (1 + 14 + 91) / 16384, doubled
    assert comparison.mcnemar_p == 2 * 106 / 16384
    assert comparison.verdict is Conclusion.IMPROVED
    assert comparison.bootstrap.low < 0.2 < comparison.bootstrap.high


def test_the_mirror_table_is_a_regression(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, *table(fixed=2, broken=12, same_pass=33, same_fail=3))

    assert comparison.verdict is Conclusion.REGRESSED
    assert comparison.difference == pytest.approx(-0.2)


def test_a_balanced_change_is_no_detectable_change(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, *table(fixed=5, broken=3, same_pass=30, same_fail=12))

    # P[X <= 3], X ~ Bin(8, 1/2) = (1 + 8 + 28 + 56) / 256, doubled
    assert comparison.mcnemar_p == 2 * 93 / 256
    assert comparison.verdict is Conclusion.NO_CHANGE
    assert "5 fixed against 3 broken" in comparison.verdict_reason


def test_five_changes_are_too_few_to_tell_even_all_one_way(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, *table(fixed=5, broken=0, same_pass=40, same_fail=5))

    assert comparison.mcnemar_p == 0.0625
    assert comparison.verdict is Conclusion.TOO_SMALL
    assert "only 5 cases changed outcome" in comparison.verdict_reason


def test_six_changes_all_one_way_are_enough(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, *table(fixed=6, broken=0, same_pass=40, same_fail=4))

    assert comparison.mcnemar_p == 0.03125
    assert comparison.verdict is Conclusion.IMPROVED


def test_cases_judged_by_one_run_only_are_reported_and_not_counted(tmp_path: Path) -> None:
    before = {"a": False, "b": True, "only-before": True}
    after = {"a": True, "b": True, "only-after": False}

    comparison = _compare(tmp_path, before, after)

    assert comparison.paired_cases == 2
    assert comparison.only_before == ["only-before"]
    assert comparison.only_after == ["only-after"]
    assert (comparison.accuracy_before, comparison.accuracy_after) == (0.5, 1.0)


def test_restricting_to_given_ids_compares_those_only_and_names_missing_ones(tmp_path: Path) -> None:
    before, after = table(fixed=10, broken=0, same_pass=10, same_fail=0)  # c000-c009 fixed, c010-c019 same

    comparison = _compare(tmp_path, before, after, cases=["c010", "c011", "c000", "never-judged"])

    assert comparison.paired_cases == 3
    assert comparison.fixed_count == 1
    assert [flip.case_id for flip in comparison.fixed] == ["c000"]
    assert comparison.in_neither == ["never-judged"]
    assert comparison.only_before == comparison.only_after == []
    assert comparison.selection == "4 listed cases"


def test_a_case_whose_gold_differs_is_not_paired(tmp_path: Path) -> None:
    before = scoring_output(tmp_path / "b.zip", [verdict("a", True), verdict("b", True, gold="7")])
    after = scoring_output(tmp_path / "a.zip", [verdict("a", False), verdict("b", True, gold="8")])

    comparison = compare_runs(BEFORE, before, AFTER, after, resamples=50)

    assert comparison.paired_cases == 1
    assert comparison.gold_differs == ["b"]


def test_fixed_and_broken_cases_show_both_responses_and_judgments(tmp_path: Path) -> None:
    before = scoring_output(
        tmp_path / "b.zip",
        [
            verdict("fixed", False, raw_prediction="I think 41", detail="read 41"),
            verdict("broken", True, raw_prediction="So 42.", detail="exact match"),
        ],
    )
    after = scoring_output(
        tmp_path / "a.zip",
        [
            verdict("fixed", True, raw_prediction="6 * 7 = 42. Answer: 42", detail="exact match"),
            verdict("broken", False, raw_prediction="", prediction=None, answered=False, detail="no answer"),
        ],
    )

    comparison = compare_runs(BEFORE, before, AFTER, after, resamples=50)

    fixed, broken = comparison.fixed[0], comparison.broken[0]
    assert (fixed.case_id, fixed.question, fixed.gold) == ("fixed", "question of fixed", "42")
    assert (fixed.before.response, fixed.before.passed, fixed.before.detail) == (
        "I think 41",
        False,
        "read 41",
    )
    assert (fixed.after.response, fixed.after.passed) == ("6 * 7 = 42. Answer: 42", True)
    assert fixed.after.criteria == {"final-answer": True}
    assert (broken.before.response, broken.after.response, broken.after.prediction) == ("So 42.", "", None)
    assert broken.after.detail == "no answer"


def test_subgroups_give_per_criterion_and_per_breakdown_deltas_with_holm(tmp_path: Path) -> None:
    # easy: 6 fixed, 0 broken, 2 both passed; hard: 1 fixed, 1 broken. One criterion, judged on every case.
    rows = [("easy", False, True)] * 6 + [("easy", True, True)] * 2
    rows += [("hard", False, True), ("hard", True, False)]
    before = [verdict(f"c{i}", first, difficulty=level) for i, (level, first, _) in enumerate(rows)]
    after = [verdict(f"c{i}", second, difficulty=level) for i, (level, _, second) in enumerate(rows)]

    comparison = compare_runs(
        BEFORE,
        scoring_output(tmp_path / "b.zip", before),
        AFTER,
        scoring_output(tmp_path / "a.zip", after),
        resamples=50,
    )

    rows_by_key = {(row.kind, row.value): row for row in comparison.subgroups}
    assert list(rows_by_key) == [
        ("criterion", "final-answer"),
        ("difficulty", "easy"),
        ("difficulty", "hard"),
    ]
    easy = rows_by_key[("difficulty", "easy")]
    assert (easy.cases, easy.fixed, easy.broken) == (8, 6, 0)
    assert (easy.accuracy_before, easy.accuracy_after, easy.difference) == (0.25, 1.0, 0.75)
    # raw p-values: easy 2/64 = 0.03125; final-answer 7 fixed 1 broken: 2 * 9/256 = 0.0703125; hard 1.0
    assert easy.p_value == 0.03125
    assert rows_by_key[("criterion", "final-answer")].p_value == 0.0703125
    # Holm over the three: 0.03125 * 3, then max(0.09375, 0.0703125 * 2), then max(.., 1.0 * 1)
    assert easy.p_holm == pytest.approx(0.09375)
    assert rows_by_key[("criterion", "final-answer")].p_holm == pytest.approx(0.140625)
    assert rows_by_key[("difficulty", "hard")].p_holm == 1.0


def test_a_criterion_judged_in_one_run_only_is_left_out_of_its_row(tmp_path: Path) -> None:
    units = [CriterionResult(id="final-answer", passed=True), CriterionResult(id="units", passed=True)]
    before = scoring_output(tmp_path / "b.zip", [verdict("a", True, criteria=units), verdict("b", True)])
    after = scoring_output(tmp_path / "a.zip", [verdict("a", True), verdict("b", True)])

    comparison = compare_runs(BEFORE, before, AFTER, after, resamples=50)

    assert [(row.kind, row.value, row.cases) for row in comparison.subgroups if row.kind == "criterion"] == [
        ("criterion", "final-answer", 2)
    ]


def test_a_criterion_left_unjudged_counts_only_where_both_runs_judged_it(tmp_path: Path) -> None:
    # given answer-format judged on a and b in both runs, but unjudged (None) on c before
    def marks(passed: bool | None, answer_format: bool | None) -> list[CriterionResult]:
        return [
            CriterionResult(id="final-answer", passed=passed),
            CriterionResult(id="answer-format", passed=answer_format),
        ]

    before = scoring_output(
        tmp_path / "b.zip",
        [
            verdict("a", False, criteria=marks(False, False)),
            verdict("b", False, criteria=marks(False, True)),
            verdict("c", False, criteria=marks(False, None)),
        ],
    )
    after = scoring_output(
        tmp_path / "a.zip",
        [
            verdict("a", False, criteria=marks(False, True)),
            verdict("b", True, criteria=marks(True, True)),
            verdict("c", False, criteria=marks(False, True)),
        ],
    )

    comparison = compare_runs(BEFORE, before, AFTER, after, resamples=50)

    # then answer-format's row has a and b (a fixed: its format, not its value), final-answer all three
    rows = {row.value: row for row in comparison.subgroups if row.kind == "criterion"}
    assert (rows["answer-format"].cases, rows["answer-format"].fixed, rows["answer-format"].broken) == (
        2,
        1,
        0,
    )
    assert (rows["answer-format"].accuracy_before, rows["answer-format"].accuracy_after) == (0.5, 1.0)
    assert (rows["final-answer"].cases, rows["final-answer"].fixed) == (3, 1)


def _answering_runs(tmp_path: Path, *, after_known: bool = True) -> tuple[Path, Path]:
    """Ten cases. Before: 4 answers read, 2 of them right; the other 6 unread. After: all 10 read, 5 right
    (the same 2 and 3 of the formerly unread)."""
    before = [verdict(f"c{i}", i < 2, answered=i < 4) for i in range(10)]
    after = [verdict(f"c{i}", i < 2 or 4 <= i < 7, answered=True if after_known else None) for i in range(10)]
    return scoring_output(tmp_path / "b.zip", before), scoring_output(tmp_path / "a.zip", after)


def test_the_report_gives_the_answer_rate_and_the_accuracy_among_answered(tmp_path: Path) -> None:
    before, after = _answering_runs(tmp_path)

    comparison = compare_runs(BEFORE, before, AFTER, after, resamples=50)

    # accuracy went 2/10 -> 5/10, all of it from answers read: 4/10 -> 10/10 read, 2/4 -> 5/10 right
    assert (comparison.accuracy_before, comparison.accuracy_after) == (0.2, 0.5)
    first, second = comparison.answering_before, comparison.answering_after
    assert (first.answered, first.answer_rate, first.passed_among_answered) == (4, 0.4, 2)
    assert (second.answered, second.answer_rate, second.passed_among_answered) == (10, 1.0, 5)
    assert first.accuracy_among_answered == second.accuracy_among_answered == 0.5


def test_a_run_whose_verdicts_do_not_say_what_was_answered_has_its_rates_not_known(tmp_path: Path) -> None:
    before, after = _answering_runs(tmp_path, after_known=False)

    comparison = compare_runs(BEFORE, before, AFTER, after, resamples=50)

    assert comparison.answering_before.answer_rate == 0.4
    assert comparison.answering_after.model_dump() == {
        "answered": None,
        "answer_rate": None,
        "passed_among_answered": None,
        "accuracy_among_answered": None,
    }


def test_a_run_that_answered_nothing_has_no_accuracy_among_answered(tmp_path: Path) -> None:
    before = scoring_output(tmp_path / "b.zip", [verdict(f"c{i}", False, answered=False) for i in range(3)])
    after = scoring_output(tmp_path / "a.zip", [verdict(f"c{i}", True) for i in range(3)])

    comparison = compare_runs(BEFORE, before, AFTER, after, resamples=50)

    assert (comparison.answering_before.answered, comparison.answering_before.answer_rate) == (0, 0.0)
    assert comparison.answering_before.accuracy_among_answered is None
    assert comparison.answering_after.accuracy_among_answered == 1.0


def test_variants_of_one_case_are_resampled_as_one_source_case(tmp_path: Path) -> None:
    before = {"q1~00": False, "q1~01": False, "q1~02": False, "q2": True, "q3~00": True}
    after = {"q1~00": True, "q1~01": True, "q1~02": False, "q2": True, "q3~00": True}

    comparison = _compare(tmp_path, before, after)

    assert comparison.paired_cases == 5
    assert comparison.bootstrap.source_cases == 3  # q1, q2, q3


def test_the_report_keeps_the_package_and_both_models_and_says_training_is_not_proof(tmp_path: Path) -> None:
    package = PackageRef(package_id="pkg-abc", sha256="0" * 64, held_out=("c000", "c001", "c002"))
    before, after = table(fixed=2, broken=0, same_pass=2, same_fail=0)

    comparison = _compare(tmp_path, before, after, cases=list(package.held_out), package=package)

    assert (comparison.package_id, comparison.package_sha256) == ("pkg-abc", "0" * 64)
    assert (comparison.before.model, comparison.after.model) == ("base-7b", "base-7b-lora")
    assert comparison.selection == "the 3 held-out cases of package pkg-abc"
    assert comparison.notice == NOT_ESTABLISHED
    assert "Training completion alone does not establish benchmark improvement" in comparison.notice
    assert NOT_HELD_OUT not in comparison.notes


def test_without_a_package_the_report_warns_the_cases_may_have_been_trained_on(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, *table(fixed=2, broken=0, same_pass=2, same_fail=0))

    assert NOT_HELD_OUT in comparison.notes
    assert "not restricted to a training package's held-out set" in NOT_HELD_OUT


def test_no_case_in_common_is_refused_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(NoPairedCases, match="judged no case in common"):
        _compare(tmp_path, {"a": True}, {"b": True})


def test_a_scoring_output_without_verdicts_is_refused_by_name(tmp_path: Path) -> None:
    empty = tmp_path / "empty.zip"
    write_zip(empty, {"scores.json": b"{}"})
    after = outcomes(tmp_path / "a.zip", {"a": True})

    with pytest.raises(ScoringError, match=r"before run's empty\.zip holds no per-case verdicts"):
        compare_runs(BEFORE, empty, AFTER, after)


def test_a_broken_verdict_line_is_named(tmp_path: Path) -> None:
    before = outcomes(tmp_path / "b.zip", {"a": True})
    after = tmp_path / "a.zip"
    write_zip(after, {"verdicts.jsonl": b'{"case_id": "a"}\n'})

    with pytest.raises(ScoringError, match=r"after run's verdicts\.jsonl line 1 is not a verdict"):
        compare_runs(BEFORE, before, AFTER, after)


def test_a_single_changed_case_is_named_in_the_singular(tmp_path: Path) -> None:
    comparison = _compare(tmp_path, *table(fixed=1, broken=0, same_pass=3, same_fail=0))

    assert comparison.verdict is Conclusion.TOO_SMALL
    assert comparison.verdict_reason.startswith("only 1 case changed outcome; with fewer than 6")
