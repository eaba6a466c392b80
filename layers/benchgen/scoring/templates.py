"""What every built-in scoring template is made of: a judge per case and a running aggregator.

A judge turns (case, prediction or None, criteria) into a :class:`Verdict`. An aggregator folds verdicts
into metrics in constant memory: counters, plus one small counter per distinct difficulty, domain and
route value (capped, so a bundle that gives every case its own domain cannot grow it without bound).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchgen.bundle.spec import Criterion, Template
from benchgen.cases import Case, Prediction
from benchgen.sandbox.job import Sandbox
from benchgen.verdicts import CriterionResult, Verdict

Judge = Callable[[Case, Prediction | None, Sequence[Criterion]], Verdict]
GROUP_LIMIT = 200
OTHER_GROUP = "(other)"


@dataclass(frozen=True)
class ScoringOptions:
    """Settings a template may need beyond the case and its prediction."""

    metadata: Mapping[str, Any] = field(default_factory=dict)  # the prediction output's metadata
    time_limit: int = 600  # code: seconds for one case's test command
    workdir: Path | None = None  # code: where cases are materialised
    sandbox: Sandbox | None = None  # code: where the case tests run (None: the local runner)


def criteria_results(case: Case, criteria: Sequence[Criterion], passed: bool) -> list[CriterionResult]:
    """Each governing criterion judged with the case; a case's own ``criteria`` ids narrow the list."""
    own = (case.model_extra or {}).get("criteria")
    if isinstance(own, list) and own:
        return [CriterionResult(id=str(criterion_id), passed=passed) for criterion_id in own]
    return [CriterionResult(id=criterion.id, passed=passed) for criterion in criteria]


def case_verdict(
    case: Case,
    criteria: Sequence[Criterion],
    *,
    gold: str,
    prediction: str | None,
    raw_prediction: str,
    passed: bool,
    answered: bool,
    detail: str,
    near_miss: bool = False,
    score: float | None = None,
    route: str | None = None,
) -> Verdict:
    """What a template decided about a case, with what every verdict carries from the case itself.

    ``score`` defaults to full or no credit; ``route`` to the case's own.
    """
    return Verdict(
        case_id=case.id,
        question=case.question,
        gold=gold,
        prediction=prediction,
        raw_prediction=raw_prediction,
        passed=passed,
        answered=answered,
        near_miss=near_miss,
        score=(1.0 if passed else 0.0) if score is None else score,
        criteria=criteria_results(case, criteria, passed),
        difficulty=case.difficulty,
        domain=case.domain,
        route=case.route if route is None else route,
        solution=case.solution,
        detail=detail,
    )


def rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


class Aggregator:
    """Totals shared by every template; subclasses add their own metrics in :meth:`scores`."""

    def __init__(self) -> None:
        self.total = 0
        self.passed = 0
        self.answered = 0
        self.near_misses = 0
        self._groups: dict[str, dict[str, list[int]]] = {"difficulty": {}, "domain": {}, "route": {}}

    def add(self, verdict: Verdict, case: Case, prediction: Prediction | None) -> None:
        self.count(verdict)

    def count(self, verdict: Verdict) -> None:
        """Fold in what the verdict alone tells (also used for a scoring program's own verdicts)."""
        self.total += 1
        self.passed += verdict.passed
        self.answered += verdict.answered
        self.near_misses += verdict.near_miss
        for dimension, value in (
            ("difficulty", verdict.difficulty),
            ("domain", verdict.domain),
            ("route", verdict.route),
        ):
            if value is None:
                continue
            groups = self._groups[dimension]
            key = value if value in groups or len(groups) < GROUP_LIMIT else OTHER_GROUP
            counts = groups.setdefault(key, [0, 0])
            counts[0] += 1
            counts[1] += verdict.passed

    def scores(self) -> dict[str, float]:
        return {
            "accuracy": rate(self.passed, self.total),
            "answer_rate": rate(self.answered, self.total),
            "total": float(self.total),
        }

    def breakdowns(self) -> dict[str, dict[str, dict[str, float]]]:
        """``{"difficulty": {"easy": {"total": 3, "passed": 2, "rate": 0.667}}}`` (empty ones left out)."""
        return {
            dimension: {
                value: {"total": float(total), "passed": float(passed), "rate": rate(passed, total)}
                for value, (total, passed) in sorted(groups.items())
            }
            for dimension, groups in self._groups.items()
            if groups
        }


@dataclass(frozen=True)
class ScoringTemplate:
    name: Template
    judge: Judge
    new_aggregator: Callable[[], Aggregator]
