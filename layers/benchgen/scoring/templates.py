"""What every built-in scoring template is made of: a judge per case and a running aggregator.

A judge turns (case, prediction or None, criteria) into a :class:`Verdict`. An aggregator folds verdicts
into metrics: counters, plus one small counter per distinct difficulty, domain and route value. The
detailed results report every value; the run's breakdowns cap them (see :func:`capped`).
"""

from __future__ import annotations

import copy
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import msgspec

from benchgen.bundle.runtime import MINIMAL
from benchgen.bundle.spec import CompetitionSpec, Criterion
from benchgen.cases import Case, Prediction
from benchgen.judging import JudgeRecord, JudgeRequests, JudgeSettings
from benchgen.sandbox.job import Sandbox
from benchgen.scoring.patch import TEST_TIME_LIMIT
from benchgen.verdicts import AnyVerdict, CriterionMark, VerdictRecord, is_unjudged
from benchgen.vocabulary import TemplateName

Judge = Callable[[Case, Prediction | None, Sequence[Criterion]], VerdictRecord]
GROUP_LIMIT = 200
OTHER_GROUP = "(other)"
T = TypeVar("T")
C = TypeVar("C", bound=Case)


@dataclass(frozen=True)
class ScoringOptions:
    """Settings a template may need beyond the case and its prediction."""

    time_limit: int = TEST_TIME_LIMIT  # code: seconds for one case's test command
    workdir: Path | None = None  # code: where cases are materialised
    sandbox: Sandbox | None = None  # code: where the case tests run (None: the local runner)
    runtime: str = MINIMAL.name  # code: the runtime the case tests run in (the environment's)
    judge: JudgeSettings | None = None  # a template that asks a judge: the environment's judge
    judgments: Mapping[str, JudgeRecord] | None = None  # ... and what the judging pass gave, by case id


Judged = tuple[tuple[str, ...], tuple[bool | None, ...]]
"""What a template judged of one case: the criterion ids it judges (a constant of the template, see its
docstring) and, in their order, its judgment of each (None: not judged for this case). A governing criterion
whose id is not among them is recorded unjudged (``passed`` None)."""


@functools.lru_cache(maxsize=256)
def _marks(ids: tuple[str, ...], judged: Judged) -> tuple[CriterionMark, ...]:
    # Every case of a benchmark names the same few criteria, judged one of a few ways: one set of marks
    # serves them all, and the per-case path only builds the key.
    found = dict(zip(*judged, strict=True))
    return tuple(CriterionMark(name, found.get(name)) for name in ids)


def criterion_ids(case: Case, criteria: Sequence[Criterion]) -> tuple[str, ...]:
    """The ids of the criteria that govern a case: its own ``criteria`` list, else the task's."""
    own = case.criteria
    return tuple(map(str, own)) if isinstance(own, list) and own else tuple(c.id for c in criteria)


def criteria_results(case: Case, criteria: Sequence[Criterion], judged: Judged) -> tuple[CriterionMark, ...]:
    """Each governing criterion with the template's own judgment of what it names, None where the template
    has none; a case's own ``criteria`` ids narrow the list."""
    return _marks(criterion_ids(case, criteria), judged)


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
    judged: Judged,
    near_miss: bool = False,
    score: float | None = None,
    route: str | None = None,
    marks: tuple[CriterionMark, ...] | None = None,
    unjudged: str | None = None,
) -> VerdictRecord:
    """What a template decided about a case, with what every verdict carries from the case itself.

    ``judged`` holds the template's judgment of each criterion it knows, never the case's pass or fail
    copied: a criterion names one thing (the answer's format, its value) and is judged on it alone.
    ``marks``, when given, are the case's criteria as the template marked them itself (a template whose
    criteria each case names, with their scores), in place of those ``judged`` makes. ``unjudged``: why the
    case could not be judged (``passed`` is then False, and nothing counts it as a fail).
    ``score`` defaults to full or no credit; ``route`` to the case's own.
    """
    return VerdictRecord(
        case_id=case.id,
        question=case.question,
        gold=gold,
        prediction=prediction,
        raw_prediction=raw_prediction,
        passed=passed,
        answered=answered,
        near_miss=near_miss,
        score=(1.0 if passed else 0.0) if score is None else float(score),
        criteria=criteria_results(case, criteria, judged) if marks is None else marks,
        difficulty=case.difficulty,
        domain=case.domain,
        route=case.route if route is None else route,
        solution=case.solution,
        detail=detail,
        unjudged=msgspec.UNSET if unjudged is None else unjudged,
    )


def rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


class Aggregator:
    """Totals shared by every template; subclasses add their own metrics in :meth:`scores`.

    Aggregators merge: :meth:`state` is what one part of a run folds into, :meth:`merge` adds a part's state
    to this one. Counts are integers and float sums exact, and the groups are kept uncapped in the order
    their values first appear, so that parts merged in order give what one pass over every case gives.
    """

    def __init__(self) -> None:
        self.total = 0
        self.passed = 0
        self.answered = 0
        self.near_misses = 0
        self.unjudged = 0  # cases that could not be judged: neither passed nor failed
        # dimension -> value -> [cases, passed], values in the order they first appear
        self.groups: dict[str, dict[str, list[int]]] = {"difficulty": {}, "domain": {}, "route": {}}

    def add(self, verdict: VerdictRecord, case: Case, prediction: Prediction | None) -> None:
        self.count(verdict)

    def set_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Take what the prediction output's metadata says about the whole run (nothing by default)."""

    def count(self, verdict: AnyVerdict) -> None:
        """Fold in what the verdict alone tells (also used for a scoring program's own verdicts)."""
        self.total += 1
        self.passed += verdict.passed
        self.answered += verdict.answered is True  # not known counts as no answer read
        self.near_misses += verdict.near_miss
        self.unjudged += is_unjudged(verdict)
        for dimension, value in (
            ("difficulty", verdict.difficulty),
            ("domain", verdict.domain),
            ("route", verdict.route),
        ):
            if value is None:
                continue
            counts = self.groups[dimension].get(value)
            if counts is None:
                self.groups[dimension][value] = [1, int(verdict.passed)]
            else:
                counts[0] += 1
                counts[1] += verdict.passed

    def state(self) -> dict[str, Any]:
        """Everything :meth:`scores` and :meth:`breakdowns` depend on, as JSON values."""
        return {
            "total": self.total,
            "passed": self.passed,
            "answered": self.answered,
            "near_misses": self.near_misses,
            "unjudged": self.unjudged,
            "groups": {
                dimension: [[value, *counts] for value, counts in groups.items()]
                for dimension, groups in self.groups.items()
            },
        }

    def merge(self, state: Mapping[str, Any]) -> None:
        """Add the state of the next part of the run (parts merged in case order)."""
        self.total += state["total"]
        self.passed += state["passed"]
        self.answered += state["answered"]
        self.near_misses += state["near_misses"]
        self.unjudged += state["unjudged"]
        for dimension, rows in state["groups"].items():
            groups = self.groups[dimension]
            for value, total, passed in rows:
                counts = groups.setdefault(value, [0, 0])
                counts[0] += total
                counts[1] += passed

    def scores(self) -> Mapping[str, float | None]:
        """The run's metrics by key; None for a metric with nothing to be computed over (see
        :meth:`no_score`)."""
        return {
            "accuracy": rate(self.passed, self.total),
            "answer_rate": rate(self.answered, self.total),
            "total": float(self.total),
        }

    def no_score(self) -> str | None:
        """Why the metrics :meth:`scores` leaves without a value have none; None when every one has one."""
        return None

    def breakdowns(self) -> dict[str, dict[str, dict[str, float]]]:
        """``{"difficulty": {"easy": {"total": 3, "passed": 2, "rate": 0.667}}}`` (empty ones left out)."""
        return {
            dimension: {
                value: {"total": float(total), "passed": float(passed), "rate": rate(passed, total)}
                for value, (total, passed) in sorted(capped(groups, add_counts).items())
            }
            for dimension, groups in self.groups.items()
            if groups
        }


def add_counts(into: list[int], counts: list[int]) -> None:
    """Add ``[cases, passed]`` counts into others (the groups :func:`capped` folds together)."""
    into[0] += counts[0]
    into[1] += counts[1]


def capped(groups: dict[str, T], add: Callable[[T, T], None]) -> dict[str, T]:
    """The first ``GROUP_LIMIT`` values of ``groups`` (in the order they appeared) and the rest in one
    ``(other)`` group, so that a bundle giving every case its own domain keeps a readable breakdown."""
    if len(groups) <= GROUP_LIMIT:
        return groups
    kept = {value: copy.deepcopy(counts) for value, counts in itertools.islice(groups.items(), GROUP_LIMIT)}
    for counts in itertools.islice(groups.values(), GROUP_LIMIT, None):
        if OTHER_GROUP in kept:
            add(kept[OTHER_GROUP], counts)
        else:
            kept[OTHER_GROUP] = copy.deepcopy(counts)
    return kept


@dataclass(frozen=True)
class ScoringTemplate:
    name: TemplateName
    judge: Judge
    new_aggregator: Callable[[], Aggregator]
    case_type: type[Case] = Case  # the record its cases decode into


def judging(
    kind: type[C], judge: Callable[[C, Prediction | None, Sequence[Criterion]], VerdictRecord]
) -> Judge:
    """``judge``, which reads the fields of the case record ``kind``, as a template's judge: the template
    names ``kind`` its ``case_type``, so its cases are decoded as ``kind`` before they are judged."""
    return cast(Judge, judge)


def unconfigured(judge: Judge) -> Callable[[ScoringOptions], Judge]:
    """The builder of a template whose judge no run option configures."""
    return lambda options: judge


@dataclass(frozen=True)
class TemplateDefinition:
    """Everything a built-in template is, defined once in its own module as ``TEMPLATE`` and found by its
    name (:mod:`benchgen.scoring.registry`).

    ``case_fields`` are what its judge reads of a case besides the question (what a grader needs to score
    an answer, the case's criteria ids aside); ``judged`` the criterion ids it judges, in the order its
    verdicts give them (any other id is recorded unjudged). ``runs_tests``: its judge runs each case's own
    test command, so a grader must run it where the case's tests can run. ``case_type``: the record its
    cases decode into, :class:`Case` or a subclass of it with the fields only this template reads.
    ``asks``: how it asks a model to judge each case, when its judge reads a model's judgments
    (:mod:`benchgen.judging`), which a judging pass asks for before scoring. ``case_criteria``: the
    criterion ids a case itself names for its judge to judge (a rubric's), beyond ``judged``.
    ``spec_problems``: what it finds wrong in a bundle's ``competition.yaml`` beyond what every template
    needs, as (field, what to fix) pairs, refused when the bundle is checked.
    """

    name: str
    build: Callable[[ScoringOptions], Judge]  # its judge, configured as a run configures it
    aggregator: Callable[[], Aggregator]
    case_fields: tuple[str, ...]
    judged: tuple[str, ...]
    runs_tests: bool = False
    case_type: type[Case] = Case
    asks: JudgeRequests | None = None  # its judge grades with a model's judgments: how it asks for them
    case_criteria: Callable[[Any], tuple[str, ...]] | None = None  # the ids a case has judged, by the case
    spec_problems: Callable[[CompetitionSpec], list[tuple[str, str]]] | None = None
