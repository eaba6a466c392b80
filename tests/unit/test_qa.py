"""The qa template: SQuAD v2 normalisation, exact match and F1, unanswerable questions."""

from __future__ import annotations

import pytest

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.qa import QaAggregator, make_judge
from benchgen.scoring.qa_answer import f1_score, normalize_answer

judge = make_judge()


def _case(answers: list[str], case_id: str = "q1") -> Case:
    return Case(id=case_id, question="Where?", context="...", answers=answers)


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  an   apple, a pear ", "apple pear"),
        ("Theory of the atom", "theory of atom"),
        ("U.S.A.", "u s"),
    ],
)
def test_answers_are_normalised_like_squad(text: str, normalised: str) -> None:
    assert normalize_answer(text) == normalised


def test_f1_counts_shared_tokens() -> None:
    # prediction "the big red barn" -> [big, red, barn]; gold "red barn" -> [red, barn]
    # common 2: precision 2/3, recall 1, F1 = 2 * (2/3) / (5/3) = 0.8
    assert f1_score("the big red barn", "red barn") == pytest.approx(0.8)


def test_f1_of_disjoint_answers_is_zero() -> None:
    assert f1_score("Paris", "London") == 0.0


def test_exact_match_and_f1_take_the_best_gold_answer() -> None:
    verdict = judge(
        _case(["Denver Broncos", "Broncos"]), Prediction(id="q1", prediction_text="the Broncos"), []
    )
    assert (verdict.passed, verdict.score) == (True, 1.0)


def test_a_partial_answer_fails_with_its_f1_and_is_a_near_miss() -> None:
    verdict = judge(_case(["red barn"]), Prediction(id="q1", prediction_text="the big red barn"), [])
    assert (verdict.passed, verdict.near_miss) == (False, True)
    assert verdict.score == pytest.approx(0.8)


def test_an_empty_prediction_is_right_for_an_unanswerable_question() -> None:
    verdict = judge(_case([]), Prediction(id="q1", prediction_text=""), [])
    assert (verdict.passed, verdict.answered, verdict.gold) == (True, False, "(no answer)")


def test_a_high_no_answer_probability_abstains() -> None:
    prediction = Prediction(id="q1", prediction_text="Paris", no_answer_probability=0.9)
    verdict = judge(_case([]), prediction, [])
    assert (verdict.passed, verdict.prediction) == (True, None)


def test_a_low_no_answer_probability_keeps_the_text() -> None:
    prediction = Prediction(id="q1", prediction_text="Paris", no_answer_probability=0.2)
    verdict = judge(_case([]), prediction, [])
    assert (verdict.passed, verdict.prediction) == (False, "Paris")


def test_the_threshold_is_configurable() -> None:
    strict = make_judge(no_answer_threshold=0.95)
    prediction = Prediction(id="q1", prediction_text="Paris", no_answer_probability=0.9)
    assert strict(_case([]), prediction, []).passed is False


def test_the_aggregate_splits_has_answer_and_no_answer_as_fractions() -> None:
    # given: exact hit, F1 0.8 miss, abstention on an unanswerable, answer to an unanswerable
    aggregator = QaAggregator()
    rows = [
        (["Broncos"], Prediction(id="a", prediction_text="Broncos")),
        (["red barn"], Prediction(id="b", prediction_text="big red barn")),
        ([], Prediction(id="c", prediction_text="")),
        ([], Prediction(id="d", prediction_text="London")),
    ]
    for answers, prediction in rows:
        case = _case(answers, prediction.id)
        aggregator.add(judge(case, prediction, []), case, prediction)
    scores = aggregator.scores()
    assert scores["exact_match"] == 0.5
    assert scores["f1"] == pytest.approx((1 + 0.8 + 1 + 0) / 4)
    assert scores["has_answer_exact"] == 0.5
    assert scores["has_answer_f1"] == pytest.approx(0.9)
    assert scores["no_answer_exact"] == 0.5
    assert scores["no_answer_f1"] == 0.5
    assert scores["answer_rate"] == 0.75


def test_an_answer_written_as_no_answer_still_counts_as_answerable() -> None:
    # given: a case whose acceptable answer is literally "(no answer)", and a truly unanswerable one
    aggregator = QaAggregator()
    for answers, case_id in ((["(no answer)"], "literal"), ([], "unanswerable")):
        case = _case(answers, case_id)
        prediction = Prediction(id=case_id, prediction_text="no answer")
        aggregator.add(judge(case, prediction, []), case, prediction)
    # then
    scores = aggregator.scores()
    assert (scores["has_answer_total"], scores["no_answer_total"]) == (1.0, 1.0)
    assert scores["has_answer_exact"] == 1.0


QA_CRITERIA = [
    Criterion(id="exact-answer"),
    Criterion(id="grounded-answer"),
    Criterion(id="abstain-when-unanswerable"),
]
CONTEXT = "The bridge was opened in 1932 by the mayor of Lorkaka."


@pytest.mark.parametrize(
    ("answers", "text", "judged"),
    [
        # right, and a span of the context; the case has an answer, so abstaining is not in question
        (
            ["1932"],
            "1932",
            [("exact-answer", True), ("grounded-answer", True), ("abstain-when-unanswerable", None)],
        ),
        # wrong, yet taken from the context
        (
            ["1932"],
            "the mayor",
            [("exact-answer", False), ("grounded-answer", True), ("abstain-when-unanswerable", None)],
        ),
        # wrong and made up
        (
            ["1932"],
            "1933",
            [("exact-answer", False), ("grounded-answer", False), ("abstain-when-unanswerable", None)],
        ),
        # unanswerable, and the model abstained: nothing to ground
        ([], "", [("exact-answer", True), ("grounded-answer", None), ("abstain-when-unanswerable", True)]),
        # unanswerable, and the model answered from the context anyway
        (
            [],
            "Lorkaka",
            [("exact-answer", False), ("grounded-answer", True), ("abstain-when-unanswerable", False)],
        ),
    ],
)
def test_each_criterion_judges_what_it_names(
    answers: list[str], text: str, judged: list[tuple[str, bool | None]]
) -> None:
    case = Case(id="q1", question="When?", context=CONTEXT, answers=answers)

    verdict = judge(case, Prediction(id="q1", prediction_text=text), QA_CRITERIA)

    assert [(c.id, c.passed) for c in verdict.criteria] == judged
