"""The math template: accuracy against the gold value, exact match, near misses, aggregate metrics."""

from __future__ import annotations

import pytest

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.math import MathAggregator, judge

CRITERIA = [Criterion(id="arithmetic"), Criterion(id="units")]


def _case(answer: str, criteria: list[str] | None = None) -> Case:
    return Case(id="q1", question="How many?", answer=answer, criteria=criteria)


def _says(text: str) -> Prediction:
    return Prediction(id="q1", prediction_text=text)


def test_a_differently_written_equal_number_is_correct_but_not_an_exact_match() -> None:
    verdict = judge(_case("1000"), _says("The answer is 1,000."), CRITERIA)
    assert (verdict.passed, verdict.prediction, verdict.gold) == (True, "1,000", "1000")
    assert verdict.prediction != verdict.gold


def test_the_same_string_is_an_exact_match() -> None:
    verdict = judge(_case("72"), _says("#### 72"), CRITERIA)
    assert verdict.passed
    assert verdict.prediction == verdict.gold == "72"


def test_a_gsm8k_style_gold_solution_is_reduced_to_its_final_answer() -> None:
    verdict = judge(_case("48/2 = 24 clips in May.\n#### 72"), _says("#### 72"), CRITERIA)
    assert (verdict.gold, verdict.passed) == ("72", True)


def test_an_ambiguous_thousands_answer_is_accepted_when_the_gold_means_the_decimal() -> None:
    verdict = judge(_case("2.125"), _says("The total weight is 0.5 + 1.625 = 2.125 kg"), CRITERIA)
    assert verdict.passed


def test_a_wrong_answer_within_one_percent_is_a_near_miss() -> None:
    verdict = judge(_case("200"), _says("Final answer: 199"), CRITERIA)
    assert (verdict.passed, verdict.near_miss) == (False, True)


def test_a_wrong_answer_far_from_the_gold_is_not_a_near_miss() -> None:
    verdict = judge(_case("200"), _says("Final answer: 150"), CRITERIA)
    assert (verdict.passed, verdict.near_miss) == (False, False)


def test_a_correct_answer_found_only_as_the_last_number_is_a_near_miss() -> None:
    verdict = judge(_case("12"), _says("so she has 12 left"), CRITERIA)
    assert (verdict.passed, verdict.near_miss) == (True, True)


def test_a_missing_prediction_is_unanswered_and_failed() -> None:
    verdict = judge(_case("12"), None, CRITERIA)
    assert (verdict.answered, verdict.passed, verdict.prediction, verdict.detail) == (
        False,
        False,
        None,
        "no prediction",
    )


GOVERNING = [Criterion(id="final-answer"), Criterion(id="answer-format"), Criterion(id="units")]


@pytest.mark.parametrize(
    ("gold", "response", "final_answer", "answer_format"),
    [
        ("293", "8 × 30 = 240 öğrenci.\nCevap: 240", False, True),  # well formatted, wrong
        ("12", "#### 12", True, True),
        ("12", "They have 7 and 5, so 12", True, False),  # right, but only a last number
        ("12", "The answer is either 12 or 15.", False, False),  # hedged: no one final answer
        ("12", "I cannot tell.", False, False),  # nothing to read
    ],
)
def test_each_criterion_judges_what_it_names(
    gold: str, response: str, final_answer: bool, answer_format: bool
) -> None:
    verdict = judge(_case(gold), _says(response), GOVERNING)

    # then final-answer is the value, answer-format the form, and units (not judged by math) says so
    assert [(c.id, c.passed) for c in verdict.criteria] == [
        ("final-answer", final_answer),
        ("answer-format", answer_format),
        ("units", None),
    ]


def test_a_case_listing_its_own_criteria_records_only_those() -> None:
    verdict = judge(_case("12", criteria=["answer-format"]), _says("#### 11"), GOVERNING)
    assert [(c.id, c.passed) for c in verdict.criteria] == [("answer-format", True)]


def test_no_prediction_fails_both_criteria_math_judges() -> None:
    verdict = judge(_case("12"), None, GOVERNING)
    assert [(c.id, c.passed) for c in verdict.criteria] == [
        ("final-answer", False),
        ("answer-format", False),
        ("units", None),
    ]


def test_a_textual_gold_answer_compares_case_insensitively() -> None:
    verdict = judge(_case("B"), _says("Answer: b."), CRITERIA)
    assert verdict.passed


def test_the_aggregate_reports_accuracy_exact_match_answer_rate_and_duration() -> None:
    # given four cases: exact, equal but written differently, wrong, unanswered
    aggregator = MathAggregator({"execution_time": 12.5})
    rows = [("1000", "#### 1000"), ("1000", "#### 1,000"), ("5", "#### 6"), ("5", None)]
    for gold, text in rows:
        case = _case(gold)
        prediction = _says(text) if text is not None else None
        aggregator.add(judge(case, prediction, []), case, prediction)
    scores = aggregator.scores()
    assert scores["accuracy"] == 0.5
    assert scores["exact_match"] == 0.25
    assert scores["answer_rate"] == 0.75
    assert scores["duration"] == 12.5


def test_an_answer_a_thousand_times_off_fails_although_the_other_reading_equals_the_gold() -> None:
    # given a response whose decimal comma shows that its dot groups thousands
    verdict = judge(_case("1.73"), _says("Tanesi 2,50 TL.\nCevap: 1.730 TL"), CRITERIA)
    # then 1.730 is 1730, not the gold 1.73
    assert (verdict.passed, verdict.detail) == (False, "read 1730 (after the answer marker)")


def test_a_hedged_answer_is_answered_but_wrong_even_when_one_alternative_is_the_gold() -> None:
    verdict = judge(_case("12"), _says("The answer is either 12 or 15."), CRITERIA)
    assert (verdict.answered, verdict.passed, verdict.near_miss) == (True, False, False)
    assert verdict.prediction == "12 or 15"
    assert verdict.detail == "hedged between 12 or 15 (after the answer marker): wrong whatever the gold"


def test_a_mixed_number_gold_and_answer_compare_as_values() -> None:
    verdict = judge(_case("1 1/2"), _says("Cevap: 1,5 su bardağı"), CRITERIA)
    assert (verdict.gold, verdict.passed) == ("1 1/2", True)
