"""The routing template: right route, costs from the prediction or the case, per-route breakdown."""

from __future__ import annotations

import pytest

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.routing import RoutingAggregator, case_cost, judge

COSTS = {"small": 0.001, "large": 0.02}


def _case(case_id: str, route: str) -> Case:
    return Case(id=case_id, question="Task", route=route, costs=COSTS)


def test_the_route_comes_from_the_route_field_and_matches_case_insensitively() -> None:
    verdict = judge(_case("t1", "large"), Prediction(id="t1", route=" Large "), [])
    assert (verdict.passed, verdict.prediction) == (True, "Large")


def test_the_prediction_text_names_the_route_when_there_is_no_route_field() -> None:
    verdict = judge(_case("t1", "small"), Prediction(id="t1", prediction_text="small"), [])
    assert verdict.passed


def test_the_cost_is_the_case_cost_of_the_chosen_route() -> None:
    assert case_cost(_case("t1", "small"), Prediction(id="t1", route="large")) == 0.02


def test_a_stated_cost_overrides_the_case_cost() -> None:
    assert case_cost(_case("t1", "small"), Prediction(id="t1", route="large", cost_usd=0.5)) == 0.5


def test_an_unanswered_case_costs_nothing_and_fails() -> None:
    verdict = judge(_case("t1", "small"), None, [])
    assert (verdict.passed, verdict.answered) == (False, False)
    assert case_cost(_case("t1", "small"), None) == 0.0


def test_the_aggregate_reports_accuracy_costs_and_a_per_route_breakdown() -> None:
    aggregator = RoutingAggregator()
    rows = [
        ("t1", "small", "small"),
        ("t2", "large", "small"),
        ("t3", "large", "large"),
        ("t4", "small", None),
    ]
    for case_id, gold, chosen in rows:
        case = _case(case_id, gold)
        prediction = Prediction(id=case_id, route=chosen) if chosen else None
        aggregator.add(judge(case, prediction, []), case, prediction)
    scores = aggregator.scores()
    assert (scores["accuracy"], scores["correct"], scores["total"]) == (0.5, 2.0, 4.0)
    assert scores["total_cost_usd"] == pytest.approx(0.001 + 0.001 + 0.02)
    assert scores["avg_cost_usd_per_task"] == pytest.approx(0.022 / 4)
    breakdowns = aggregator.breakdowns()
    assert breakdowns["route"]["large"] == {"total": 2.0, "passed": 1.0, "rate": 0.5}
    assert breakdowns["chosen_route"]["small"] == {"total": 2.0, "cost_usd": 0.002}


@pytest.mark.parametrize(
    ("chosen", "right_route", "cost_aware"),
    [("large", True, True), ("small", False, True), (None, False, None)],
)
def test_each_criterion_judges_what_it_names(
    chosen: str | None, right_route: bool, cost_aware: bool | None
) -> None:
    criteria = [Criterion(id="right-route"), Criterion(id="cost-aware"), Criterion(id="capable-route")]
    prediction = None if chosen is None else Prediction(id="t1", route=chosen)

    verdict = judge(_case("t1", "large"), prediction, criteria)

    # the cheap wrong route is wrong but spends no more than needed; capability is not the template's to judge
    assert [(c.id, c.passed) for c in verdict.criteria] == [
        ("right-route", right_route),
        ("cost-aware", cost_aware),
        ("capable-route", None),
    ]


def test_a_costlier_route_than_the_right_one_is_not_cost_aware() -> None:
    verdict = judge(_case("t1", "small"), Prediction(id="t1", route="large"), [Criterion(id="cost-aware")])
    assert [(c.id, c.passed) for c in verdict.criteria] == [("cost-aware", False)]
