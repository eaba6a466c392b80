"""How well a judge agrees with people: the judge asked about a bundle's human-labelled answers, and per
criterion its pass/fail against the person's.

A bundle's calibration set (``judge: calibration:``) is JSONL: each line a case of the environment's template
(its ``case_type``) plus ``answer``, the answer that was judged, and ``labels``, a person's score per
criterion id. The judge is asked about each answer exactly as a judging pass asks it (:func:`judge_one`
with the template's ``asks``, as many at once as its connection allows); the template's
:class:`CalibrationRequests` turns the judge's readable answer and the person's scores into pass/fail per
criterion. An answer the judge left unjudged is counted, and left out of the figures.

The figures per criterion: how many answers both judged (n), the share on which they agree (accuracy), and
Cohen's kappa with a 95% confidence interval from the analytic large-sample standard error of Cohen (1960),
``sqrt(po (1 - po) / (n (1 - pe)^2))``, clipped to [-1, 1]. It is deterministic and cheap, and, like any
large-sample interval, optimistic on a few dozen answers. Kappa is undefined when chance alone predicts
every verdict (judge and people each gave one and the same verdict throughout): the figures say so.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol, cast, runtime_checkable

import msgspec

from benchgen.bundle.load import resolve_in_bundle
from benchgen.cases import Case
from benchgen.environment import Environment
from benchgen.errors import BenchGenError
from benchgen.inference.judge_calls import judge_each, judge_one
from benchgen.inference.model import Model
from benchgen.inference.pacing import Budget, Pacer
from benchgen.inference.retry import Backoff
from benchgen.judging import JudgeRecord, JudgeRequests, JudgeSettings
from benchgen.records.judge_calibration import (
    UNDEFINED_KAPPA,
    CalibrationStatus,
    CriterionAgreement,
    JudgeAgreement,
    JudgeCalibration,
)
from benchgen.scoring import registry
from benchgen.scoring.templates import TemplateDefinition

# A calibration set is judged in shards as a run's answers are; people label it, so it stays small.
CALIBRATION_LIMIT = 500
_Z95 = 1.959964
# A judge that keeps failing is tried a few times per answer, not for a live run's throttled minutes.
DEFAULT_BACKOFF = Backoff(attempts=3, base_s=0.5, cap_s=5.0, throttled_s=30.0)


ONE_AT_A_TIME = Budget(in_flight=1)


class JudgeAtHand(NamedTuple):
    """The judge model to calibrate, and how hard it may be asked: its connection's bounds."""

    model: Model
    budget: Budget


class CalibrationError(ValueError):
    """A calibration set that cannot be read, or is too large; the message says what to fix."""


@runtime_checkable
class CalibrationRequests(Protocol):
    """What a template whose judge can be calibrated defines besides its ``asks``: pass/fail per criterion
    from the judge's readable answer, and from a person's scores."""

    def passes(self, case: Case, text: str) -> Mapping[str, bool]:
        """The judge's pass/fail per criterion id, read from its readable answer ``text`` about ``case``."""
        ...

    def labelled(self, case: Case, labels: Mapping[str, int]) -> Mapping[str, bool]:
        """The person's pass/fail per criterion id from their scores; a ValueError saying what is wrong
        when the scores do not fit the case (a criterion missing or unknown, a score off its scale)."""
        ...


@dataclass(frozen=True)
class LabelledAnswer:
    """One line of a calibration set: the case, the answer judged, and the person's pass/fail."""

    case: Case
    answer: str
    person: Mapping[str, bool]


class _Labels(msgspec.Struct):
    answer: str
    labels: dict[str, int]


def read_calibration(
    path: Path, case_type: type[Case], calibrates: CalibrationRequests
) -> list[LabelledAnswer]:
    """The labelled answers of the calibration set at ``path``, in its order; a :class:`CalibrationError`
    naming the line and what is wrong, or saying the set is above :data:`CALIBRATION_LIMIT`."""
    answers: list[LabelledAnswer] = []
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if len(answers) == CALIBRATION_LIMIT:
                raise CalibrationError(
                    f"{path.name} holds more than {CALIBRATION_LIMIT} labelled answers: keep at most "
                    f"{CALIBRATION_LIMIT}, the judge is asked about each at registration"
                )
            try:
                case = msgspec.json.decode(line, type=case_type)
                labelled = msgspec.json.decode(line, type=_Labels)
                person = calibrates.labelled(case, labelled.labels)
            except (msgspec.ValidationError, msgspec.DecodeError, ValueError) as error:
                raise CalibrationError(
                    f"{path.name} line {number}: {error} (each line: a case's fields, the answer judged as "
                    '"answer", and "labels", a person\'s score per criterion id)'
                ) from None
            answers.append(LabelledAnswer(case, labelled.answer, person))
    return answers


def agreement(criterion: str, pairs: Sequence[tuple[bool | None, bool]]) -> CriterionAgreement:
    """The figures of ``criterion`` from (judge, person) pass/fail pairs; a judge's None is unjudged."""
    judged = [(judge, person) for judge, person in pairs if judge is not None]
    unjudged = len(pairs) - len(judged)
    n = len(judged)
    if n == 0:
        return CriterionAgreement(criterion=criterion, n=0, unjudged=unjudged, note="no answer was judged")
    po = sum(judge == person for judge, person in judged) / n
    judge_pass = sum(judge for judge, _ in judged) / n
    person_pass = sum(person for _, person in judged) / n
    pe = judge_pass * person_pass + (1 - judge_pass) * (1 - person_pass)
    if pe >= 1:
        return CriterionAgreement(
            criterion=criterion, n=n, accuracy=round(po, 4), unjudged=unjudged, note=UNDEFINED_KAPPA
        )
    kappa = (po - pe) / (1 - pe)
    half = _Z95 * math.sqrt(po * (1 - po) / (n * (1 - pe) ** 2))
    return CriterionAgreement(
        criterion=criterion,
        n=n,
        accuracy=round(po, 4),
        kappa=round(kappa, 4),
        kappa_low=round(max(-1.0, kappa - half), 4),
        kappa_high=round(min(1.0, kappa + half), 4),
        unjudged=unjudged,
    )


def calibrate(
    answers: Sequence[LabelledAnswer],
    asks: JudgeRequests,
    calibrates: CalibrationRequests,
    settings: JudgeSettings,
    model: Model,
    backoff: Backoff,
    *,
    model_id: str | None,
    budget: Budget = ONE_AT_A_TIME,
    deadline: float | None = None,
) -> JudgeCalibration:
    """Ask the judge ``model`` about each labelled answer as a judging pass would (up to ``budget``'s
    requests in flight, paced to its quotas), and the figures of each criterion the people labelled, in
    the order first labelled. No call starts after ``deadline``: the answers left are unjudged. A judge
    that answered none of them failed, with its first error."""
    pacer = Pacer(budget)

    def judged(labelled: LabelledAnswer) -> JudgeRecord:
        case, answer = labelled.case, labelled.answer
        return judge_one(
            case.id,
            functools.partial(asks.prompt, case, answer, settings),
            functools.partial(asks.problem, case),
            model,
            backoff,
            pacer=pacer,
            deadline=deadline,
        )

    records = judge_each(answers, judged, budget.in_flight)
    return figures(answers, records, calibrates, connection=settings.connection, model_id=model_id)


def figures(
    answers: Sequence[LabelledAnswer],
    records: Sequence[JudgeRecord],
    calibrates: CalibrationRequests,
    *,
    connection: str,
    model_id: str | None,
) -> JudgeCalibration:
    """The figures of each criterion the people labelled (in the order first labelled) from the judge's
    ``records`` of ``answers`` (one each, in their order). A judge that answered none of them failed, with
    its first error."""
    pairs: dict[str, list[tuple[bool | None, bool]]] = {}
    errors: list[str] = []
    for labelled, record in zip(answers, records, strict=True):
        case = labelled.case
        if record.error is not None and not record.attempts:
            errors.append(record.error)
        read = record.read
        judge = calibrates.passes(case, read.text) if read is not None else {}
        for criterion, person in labelled.person.items():
            pairs.setdefault(criterion, []).append((judge.get(criterion), person))
    judge_named = {"connection": connection, "model_id": model_id, "answers": len(answers)}
    if answers and len(errors) == len(answers):
        return JudgeCalibration(**judge_named, status=CalibrationStatus.FAILED, reason=errors[0][:1000])
    return JudgeCalibration(
        **judge_named,
        status=CalibrationStatus.MEASURED,
        criteria=[agreement(criterion, found) for criterion, found in pairs.items()],
    )


def _judged(env: Environment) -> tuple[JudgeSettings, TemplateDefinition] | None:
    """``env``'s judge settings and its template, when its template asks a judge and it names one."""
    definition = registry.template(env.template) if env.template is not None else None
    if env.spec.judge is None or definition is None or definition.asks is None:
        return None
    return env.spec.judge, definition


@dataclass(frozen=True)
class CalibrationSet:
    """An environment's labelled answers, ready to be judged: its judge's settings, the model to ask, and
    the template that asks it (whose ``asks`` is also its :class:`CalibrationRequests`)."""

    settings: JudgeSettings
    model_id: str
    template: str
    asks: CalibrationAsks
    answers: list[LabelledAnswer]

    def failed(self, reason: str) -> JudgeCalibration:
        """The calibration of this set's judge, failed for ``reason``."""
        return failed_calibration(self.settings, self.model_id, reason)


class CalibrationAsks(JudgeRequests, CalibrationRequests, Protocol):
    """A template's ``asks`` whose judge can be calibrated."""


def failed_calibration(settings: JudgeSettings, model_id: str | None, reason: str) -> JudgeCalibration:
    """The calibration of ``settings``' judge, failed for ``reason``."""
    return JudgeCalibration(
        connection=settings.connection,
        model_id=model_id,
        status=CalibrationStatus.FAILED,
        reason=reason[:1000],
    )


def calibration_set(
    env: Environment, model_id: str | None = None
) -> CalibrationSet | JudgeCalibration | None:
    """``env``'s labelled answers for its judge (``model_id``, else its ``judge:`` model id); None when its
    template asks no judge. Without a calibration set the judge is uncalibrated; a set that cannot be read
    leaves it failed, saying why."""
    judged = _judged(env)
    if judged is None:
        return None
    settings, definition = judged
    model_id = model_id or settings.model_id
    if settings.calibration is None:
        return JudgeCalibration(
            connection=settings.connection, model_id=model_id, status=CalibrationStatus.UNCALIBRATED
        )
    asks = definition.asks
    try:
        if not isinstance(asks, CalibrationRequests):
            raise CalibrationError(f"the judge of template {definition.name} cannot be calibrated")
        if model_id is None:
            raise CalibrationError("the judge: section names no model_id to ask")
        path = resolve_in_bundle(env.root, settings.calibration, file=env.file, field="judge.calibration")
        answers = read_calibration(path, definition.case_type, asks)
    except (BenchGenError, CalibrationError) as error:
        return failed_calibration(settings, model_id, str(error))
    return CalibrationSet(settings, model_id, definition.name, cast(CalibrationAsks, asks), answers)


def calibrate_environment(
    env: Environment,
    connect: Callable[[JudgeSettings, str], JudgeAtHand],
    *,
    model_id: str | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    deadline: float | None = None,
) -> JudgeCalibration | None:
    """The agreement with people of ``env``'s judge (``model_id``, else its ``judge:`` model id, reached
    with ``connect(settings, model_id)``, asked in this process within the bounds it gives); None when its
    template asks no judge. Without a calibration set it is uncalibrated; a set that cannot be read or a
    judge that cannot be reached leave it failed, saying why."""
    found = calibration_set(env, model_id)
    if not isinstance(found, CalibrationSet):
        return found
    try:
        judge = connect(found.settings, found.model_id)
    except (BenchGenError, CalibrationError) as error:
        return found.failed(str(error))
    return calibrate(
        found.answers,
        found.asks,
        found.asks,
        found.settings,
        judge.model,
        backoff,
        model_id=found.model_id,
        budget=judge.budget,
        deadline=deadline,
    )


# A run scored where its environment was not registered (benchgen score) has no measured calibration.
NOT_MEASURED = "its agreement with people was not measured for this run (benchgen bundle check --calibrate)"


def judge_agreement(env: Environment) -> JudgeAgreement | None:
    """What a run of ``env`` shows beside its scores of its judge's agreement with people: the figures
    registration recorded (``env.judge_calibration``), or that it is uncalibrated; None when its template
    asks no judge."""
    judged = _judged(env)
    if judged is None:
        return None
    settings = judged[0]
    calibration = env.judge_calibration or JudgeCalibration(
        connection=settings.connection,
        model_id=settings.model_id,
        status=CalibrationStatus.UNCALIBRATED,
        reason=NOT_MEASURED,
    )
    return JudgeAgreement.of(calibration)
