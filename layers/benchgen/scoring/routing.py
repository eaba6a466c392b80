"""The ``routing`` template: did the model send each task to the right target, and at what cost?

The chosen route is the prediction's ``route`` field, else its ``prediction_text``; routes compare
case-insensitively, ignoring surrounding whitespace (:mod:`benchgen.scoring.routing_answer`). The cost of
a case is the prediction's ``cost_usd`` when given, else the case's ``costs`` entry for the chosen route,
else 0 (unanswered cases cost nothing).

Criteria it judges, by id (any other criterion id is recorded unjudged): ``right-route``, the chosen route
is the case's (its pass); ``cost-aware``, the chosen route costs no more than the right one by the case's
``costs`` (unjudged when no route was chosen or the costs do not price both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.float_sums import ExactSum
from benchgen.scoring.routing_answer import gold_route, read_route, right_route
from benchgen.scoring.templates import (
    Aggregator,
    TemplateDefinition,
    capped,
    case_verdict,
    rate,
    unconfigured,
)
from benchgen.verdicts import VerdictRecord

RIGHT_ROUTE = "right-route"
COST_AWARE = "cost-aware"
JUDGED = (RIGHT_ROUTE, COST_AWARE)


def chosen_route(prediction: Prediction | None) -> str | None:
    if prediction is None:
        return None
    return read_route(prediction.route or prediction.prediction_text)


def case_cost(case: Case, prediction: Prediction | None) -> float:
    """What the chosen route cost for this case, in US dollars."""
    if prediction is None:
        return 0.0
    if prediction.cost_usd is not None:
        return prediction.cost_usd
    route = chosen_route(prediction)
    return _route_costs(case).get(route.casefold(), 0.0) if route is not None else 0.0


def _route_costs(case: Case) -> dict[str, float]:
    return {name.strip().casefold(): value for name, value in (case.costs or {}).items()}


def cost_aware(case: Case, route: str | None, gold: str) -> bool | None:
    """Whether the chosen route costs no more than the right one, by the case's ``costs``; None when no
    route was chosen or the costs do not price both."""
    costs = _route_costs(case)
    if route is None or route.casefold() not in costs or gold.casefold() not in costs:
        return None
    return costs[route.casefold()] <= costs[gold.casefold()]


def judge(case: Case, prediction: Prediction | None, criteria: Sequence[Criterion]) -> VerdictRecord:
    route = chosen_route(prediction)
    gold = gold_route(case.route, case.answer)
    passed = right_route(route, gold)
    cost = case_cost(case, prediction)
    return case_verdict(
        case,
        criteria,
        gold=gold,
        prediction=route,
        raw_prediction=prediction.prediction_text if prediction is not None else "",
        passed=passed,
        answered=route is not None,
        route=gold or None,
        detail="no prediction" if prediction is None else f"cost ${cost:.6f}",
        judged=(JUDGED, (passed, cost_aware(case, route, gold))),
    )


class RoutingAggregator(Aggregator):
    def __init__(self) -> None:
        super().__init__()
        self.total_cost = ExactSum()
        # chosen route -> (times chosen, cost), routes in the order they were first chosen
        self.chosen: dict[str, tuple[list[int], ExactSum]] = {}

    def add(self, verdict: VerdictRecord, case: Case, prediction: Prediction | None) -> None:
        super().add(verdict, case, prediction)
        cost = case_cost(case, prediction)
        self.total_cost.add(cost)
        if verdict.prediction is not None:
            times, spent = self.chosen.setdefault(verdict.prediction, ([0], ExactSum()))
            times[0] += 1
            spent.add(cost)

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "total_cost": self.total_cost.state(),
            "chosen": [[route, times[0], spent.state()] for route, (times, spent) in self.chosen.items()],
        }

    def merge(self, state: Mapping[str, Any]) -> None:
        super().merge(state)
        self.total_cost.merge(ExactSum.of(state["total_cost"]))
        for route, count, cost in state["chosen"]:
            times, spent = self.chosen.setdefault(route, ([0], ExactSum()))
            times[0] += count
            spent.merge(ExactSum.of(cost))

    def scores(self) -> dict[str, float]:
        return {
            "accuracy": rate(self.passed, self.total),
            "correct": float(self.passed),
            "total": float(self.total),
            "total_cost_usd": round(self.total_cost.value(), 10),
            "avg_cost_usd_per_task": round(self.total_cost.mean(self.total), 10),
            "answer_rate": rate(self.answered, self.total),
        }

    def breakdowns(self) -> dict[str, dict[str, dict[str, float]]]:
        """Adds ``chosen_route``: how often each route was picked and what it cost."""
        result = super().breakdowns()
        if self.chosen:
            result["chosen_route"] = {
                route: {"total": float(times[0]), "cost_usd": round(spent.value(), 10)}
                for route, (times, spent) in sorted(capped(self.chosen, _add_route).items())
            }
        return result


def _add_route(into: tuple[list[int], ExactSum], other: tuple[list[int], ExactSum]) -> None:
    into[0][0] += other[0][0]
    into[1].merge(other[1])


TEMPLATE = TemplateDefinition(
    "routing", unconfigured(judge), RoutingAggregator, case_fields=("answer", "route"), judged=JUDGED
)
