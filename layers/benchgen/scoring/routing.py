"""The ``routing`` template: did the model send each task to the right target, and at what cost?

The chosen route is the prediction's ``route`` field, else its ``prediction_text``; routes compare
case-insensitively, ignoring surrounding whitespace. The cost of a case is the prediction's ``cost_usd``
when given, else the case's ``costs`` entry for the chosen route, else 0 (unanswered cases cost nothing).
"""

from __future__ import annotations

from collections.abc import Sequence

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.templates import GROUP_LIMIT, OTHER_GROUP, Aggregator, case_verdict, rate
from benchgen.verdicts import Verdict


def chosen_route(prediction: Prediction | None) -> str | None:
    if prediction is None:
        return None
    route = (prediction.route or prediction.prediction_text).strip()
    return route or None


def case_cost(case: Case, prediction: Prediction | None) -> float:
    """What the chosen route cost for this case, in US dollars."""
    if prediction is None:
        return 0.0
    if prediction.cost_usd is not None:
        return prediction.cost_usd
    route = chosen_route(prediction)
    costs = {name.strip().casefold(): value for name, value in (case.costs or {}).items()}
    return costs.get(route.casefold(), 0.0) if route is not None else 0.0


def judge(case: Case, prediction: Prediction | None, criteria: Sequence[Criterion]) -> Verdict:
    route = chosen_route(prediction)
    gold = (case.route or case.answer).strip()
    passed = route is not None and route.casefold() == gold.casefold()
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
    )


class RoutingAggregator(Aggregator):
    def __init__(self) -> None:
        super().__init__()
        self.total_cost = 0.0
        self.chosen: dict[str, list[float]] = {}  # chosen route -> [times chosen, cost]

    def add(self, verdict: Verdict, case: Case, prediction: Prediction | None) -> None:
        super().add(verdict, case, prediction)
        cost = case_cost(case, prediction)
        self.total_cost += cost
        if verdict.prediction is not None:
            key = verdict.prediction
            if key not in self.chosen and len(self.chosen) >= GROUP_LIMIT:
                key = OTHER_GROUP
            counts = self.chosen.setdefault(key, [0.0, 0.0])
            counts[0] += 1
            counts[1] += cost

    def scores(self) -> dict[str, float]:
        return {
            "accuracy": rate(self.passed, self.total),
            "correct": float(self.passed),
            "total": float(self.total),
            "total_cost_usd": round(self.total_cost, 10),
            "avg_cost_usd_per_task": round(rate(self.total_cost, self.total), 10),
            "answer_rate": rate(self.answered, self.total),
        }

    def breakdowns(self) -> dict[str, dict[str, dict[str, float]]]:
        """Adds ``chosen_route``: how often each route was picked and what it cost."""
        result = super().breakdowns()
        if self.chosen:
            result["chosen_route"] = {
                route: {"total": count, "cost_usd": round(cost, 10)}
                for route, (count, cost) in sorted(self.chosen.items())
            }
        return result
