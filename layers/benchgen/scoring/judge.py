"""The ``judge`` template: a model grades each answer against the case's rubric.

A case carries a ``rubric``, criteria each with a description, a scale and a weight, and optionally a
``reference`` answer. The environment names the judge model (``judge:`` in ``competition.yaml``, see
:class:`benchgen.judging.JudgeSettings`) and may give its own judging prompt, which may name the fields in
``PROMPT_FIELDS``.

The judge answers with one JSON object and nothing else (one ```json fence around it is allowed)::

    {"criteria": [{"id": "<criterion id>", "score": <integer>, "reason": "<one sentence>"}]}

with every criterion of the rubric exactly once, each score an integer on the criterion's scale and each
reason one line of at most ``REASON_LIMIT`` characters. Anything else cannot be read: the judge is asked once
more, told what was wrong, and an answer that still cannot be read leaves the case unjudged.

A criterion's scale is ``[low, high]`` integers, ``[0, 1]`` (fails / meets it) when not given; it passes at
``pass_at`` or above, the upper half of its scale by default. A criterion's score is its place on the scale,
from 0 to 1; a case's score is the weighted mean of its criteria's scores.

The template never asks the judge itself: it reads each case's :class:`benchgen.judging.JudgeRecord`, which
a judging pass left before scoring (``ScoringOptions.judgments``). A case passes when every criterion of its
rubric passes; near miss: failed with a score of 0.5 or more; answered: the model gave a non-empty answer
(an empty one fails every criterion, judge or not). A case whose judge gave no answer, or none that could be
read after the retry, is UNJUDGED: neither passed nor failed, its criteria not judged, its verdict keeping
why and the judge's last text (``detail``). Accuracy and the mean score are over the judged cases: when no
case was judged they have no value (null in ``scores.json``), and the run says there is no score and why.

Criteria it judges, by id: each criterion its case's rubric names (passed: its score reaches its
threshold), added after the governing criteria; a governing criterion no rubric names is unjudged.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import msgspec

from benchgen.bundle.spec import CompetitionSpec, Criterion
from benchgen.cases import Case, Prediction
from benchgen.errors import ScoringError
from benchgen.judging import JUDGMENTS_NAME, JudgeRecord, JudgeSettings
from benchgen.scoring.float_sums import ExactSum
from benchgen.scoring.rubrics import (
    DEFAULT_PROMPT,
    NO_REFERENCE,
    PROMPT_FIELDS,
    REASON_LIMIT,
    SCALE_LIMIT,
    CriterionScore,
    described,
    place,
    read_rubric_scores,
    rubric_answer_form,
    rubric_prompt,
    rubric_score,
)
from benchgen.scoring.templates import (
    Aggregator,
    Judge,
    ScoringOptions,
    TemplateDefinition,
    add_counts,
    capped,
    case_verdict,
    criterion_ids,
    judging,
    rate,
)
from benchgen.verdicts import CriterionMark, VerdictRecord, is_unjudged

NEAR_MISS_SCORE = 0.5
# A run of which no case was judged has no accuracy and no mean score: 0.0 would be a score it never got.
NOTHING_JUDGED = "no score: nothing was judged"

__all__ = [
    "ASKS",
    "DEFAULT_PROMPT",
    "NO_REFERENCE",
    "PROMPT_FIELDS",
    "REASON_LIMIT",
    "SCALE_LIMIT",
    "CriterionScore",
    "JudgeCase",
    "RubricCriterion",
    "answer_form",
    "case_score",
    "check_prompt",
    "parse_judgment",
    "render_prompt",
]


class RubricCriterion(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One criterion of a case's rubric."""

    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
    description: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    scale: tuple[int, int] = (0, 1)
    weight: Annotated[float, msgspec.Meta(gt=0, le=1000)] = 1.0
    pass_at: int | None = None

    def __post_init__(self) -> None:
        low, high = self.scale
        if not 0 < high - low <= SCALE_LIMIT:
            raise ValueError(
                f"criterion {self.id!r}: its scale [{low}, {high}] must go up, by at most {SCALE_LIMIT}"
            )
        if self.pass_at is not None and not low <= self.pass_at <= high:
            raise ValueError(
                f"criterion {self.id!r}: pass_at {self.pass_at} is outside its scale [{low}, {high}]"
            )

    @property
    def threshold(self) -> int:
        """The lowest score that passes: ``pass_at``, else the upper half of the scale."""
        low, high = self.scale
        return self.pass_at if self.pass_at is not None else low + (high - low + 1) // 2

    def norm(self, score: int) -> float:
        """``score``'s place on the scale, from 0 (its lowest) to 1 (its highest)."""
        return place(self, score)

    def described(self) -> str:
        """The criterion as the judging prompt lists it."""
        return described(self)


class JudgeCase(Case, kw_only=True):
    """A case of the judge template: a question, its rubric and an optional reference answer."""

    rubric: list[RubricCriterion] = msgspec.field(default_factory=list)
    reference: str | None = None

    def __post_init__(self) -> None:
        if not self.rubric:
            raise ValueError("a judged case needs a rubric: a list of criteria with id and description")
        ids = [criterion.id for criterion in self.rubric]
        repeated = sorted({name for name in ids if ids.count(name) > 1})
        if repeated:
            raise ValueError(f"the rubric names criteria more than once: {', '.join(repeated)}")


def answer_form(case: JudgeCase) -> str:
    """The form the judge must answer in, added after every judging prompt."""
    return rubric_answer_form(case.rubric)


def check_prompt(prompt: str) -> str | None:
    """Why a bundle's own judging prompt cannot be used (None when it can): it must name ``{answer}`` and
    ``{rubric}``, and no field but those in ``PROMPT_FIELDS``."""
    try:
        named = {name for _, name, _, _ in string.Formatter().parse(prompt) if name is not None}
    except ValueError as error:
        return f"the judging prompt is not a valid template ({error}); write a literal brace as {{{{ or }}}}"
    unknown = sorted(named - set(PROMPT_FIELDS))
    if unknown:
        return f"the judging prompt names {', '.join(unknown)}; it may name only {', '.join(PROMPT_FIELDS)}"
    missing = [name for name in ("answer", "rubric") if name not in named]
    if missing:
        return f"the judging prompt must name {{{'}, {'.join(missing)}}} so the judge sees what it grades"
    return None


def render_prompt(case: JudgeCase, answer: str, settings: JudgeSettings, problem: str | None = None) -> str:
    """The judge's prompt about ``answer`` to ``case``: the environment's prompt (or the default) with the
    case's fields, then the answer form; when ``problem`` is given, what was wrong with its last answer."""
    return rubric_prompt(settings.prompt, case.question, answer, case.reference, case.rubric, problem)


def parse_judgment(text: str, case: JudgeCase) -> list[CriterionScore] | str:
    """The judge's scores of ``case``'s rubric in rubric order, read strictly from its answer ``text``; a
    string saying what is wrong when the answer cannot be read."""
    return read_rubric_scores(text, case.rubric)


def case_score(case: JudgeCase, scores: Sequence[CriterionScore]) -> float:
    """The weighted mean of the criteria's places on their scales."""
    return rubric_score(case.rubric, scores)


class RubricRequests:
    """How the judge template asks its judge (the template's ``asks``)."""

    prompt_fields: tuple[str, ...] = PROMPT_FIELDS

    def prompt(self, case: Case, answer: str, settings: JudgeSettings, problem: str | None = None) -> str:
        assert isinstance(case, JudgeCase)
        return render_prompt(case, answer, settings, problem)

    def problem(self, case: Case, text: str) -> str | None:
        assert isinstance(case, JudgeCase)
        parsed = parse_judgment(text, case)
        return parsed if isinstance(parsed, str) else None

    def passes(self, case: Case, text: str) -> dict[str, bool]:
        """The judge's pass/fail per criterion from its readable answer (calibration)."""
        assert isinstance(case, JudgeCase)
        parsed = parse_judgment(text, case)
        if isinstance(parsed, str):
            return {}
        rubric = {criterion.id: criterion for criterion in case.rubric}
        return {score.id: score.score >= rubric[score.id].threshold for score in parsed}

    def labelled(self, case: Case, labels: Mapping[str, int]) -> dict[str, bool]:
        """A person's pass/fail per criterion from their scores (calibration): every criterion of the
        rubric scored once, on its scale."""
        assert isinstance(case, JudgeCase)
        rubric = {criterion.id: criterion for criterion in case.rubric}
        unknown = sorted(set(labels) - set(rubric))
        missing = [name for name in rubric if name not in labels]
        if unknown or missing:
            raise ValueError(
                f"labels must score every criterion of the rubric ({', '.join(rubric)}) and no other"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                + (f"; missing: {', '.join(missing)}" if missing else "")
            )
        for name, criterion in rubric.items():
            low, high = criterion.scale
            if not low <= labels[name] <= high:
                raise ValueError(f"the label of {name!r} must be an integer from {low} to {high}")
        return {name: labels[name] >= criterion.threshold for name, criterion in rubric.items()}


ASKS = RubricRequests()


NOT_JUDGED = (
    "no judgments were given: the judging pass has not run. Judge the answers first (it writes "
    f"{JUDGMENTS_NAME} beside the predictions), or give its file (benchgen score --judgments FILE)"
)


def _marks(
    case: JudgeCase, criteria: Sequence[Criterion], scores: Sequence[CriterionScore] | None, answered: bool
) -> tuple[CriterionMark, ...]:
    """The governing criteria, then the rubric's others: each rubric criterion marked by its score (by
    nothing when the case was not judged, failed when there was no answer to judge)."""
    rubric = {criterion.id: criterion for criterion in case.rubric}
    scored = {score.id: score for score in scores or ()}
    governing = criterion_ids(case, criteria)
    marks = []
    for name in (*governing, *(name for name in rubric if name not in governing)):
        found = scored.get(name)
        if found is not None:
            marks.append(
                CriterionMark(
                    name,
                    found.score >= rubric[name].threshold,
                    found.score,
                    found.reason,
                    rubric[name].scale,
                )
            )
        else:
            marks.append(CriterionMark(name, False if name in rubric and not answered else None))
    return tuple(marks)


def _reading(case: JudgeCase, record: JudgeRecord | None) -> list[CriterionScore] | tuple[str, str]:
    """The judge's scores of the case, or why it is unjudged and the judge's last text."""
    if record is None:
        return "the judging pass left no judgment of this case", ""
    last = record.attempts[-1].text if record.attempts else ""
    if record.error is not None:
        return f"the judge gave no answer: {record.error}", last
    read = record.read
    if read is None:
        problem = record.attempts[-1].problem if record.attempts else "it gave no answer"
        tries = len(record.attempts)
        return (
            f"the judge's answer could not be read after {tries} attempt{'s' * (tries != 1)}: {problem}",
            last,
        )
    parsed = parse_judgment(read.text, case)
    return (parsed, read.text) if isinstance(parsed, str) else parsed


def make_judge(judgments: Mapping[str, JudgeRecord] | None) -> Judge:
    def judge(case: JudgeCase, prediction: Prediction | None, criteria: Sequence[Criterion]) -> VerdictRecord:
        if judgments is None:
            raise ScoringError(NOT_JUDGED)
        raw = prediction.prediction_text if prediction is not None else ""
        answered = bool(raw.strip())
        verdict = functools.partial(
            case_verdict,
            case,
            criteria,
            gold=case.reference or NO_REFERENCE,
            prediction=raw if answered else None,
            raw_prediction=raw,
            answered=answered,
            judged=((), ()),
        )
        if not answered:
            detail = "no prediction" if prediction is None else "empty answer"
            marks = _marks(case, criteria, None, answered=False)
            return verdict(passed=False, detail=detail, marks=marks, score=0.0)
        reading = _reading(case, judgments.get(case.id))
        if isinstance(reading, tuple):
            why, said = reading
            marks = _marks(case, criteria, None, answered=True)
            return verdict(passed=False, detail=said, marks=marks, score=0.0, unjudged=why)
        rubric = {criterion.id: criterion for criterion in case.rubric}
        passed = all(score.score >= rubric[score.id].threshold for score in reading)
        score = case_score(case, reading)
        shown = ", ".join(f"{s.id} {s.score}/{rubric[s.id].scale[1]}" for s in reading)
        return verdict(
            passed=passed,
            near_miss=not passed and score >= NEAR_MISS_SCORE,
            score=score,
            detail=f"score {score:.2f}: {shown}",
            marks=_marks(case, criteria, reading, answered=True),
        )

    return judging(JudgeCase, judge)


def spec_problems(spec: CompetitionSpec) -> list[tuple[str, str]]:
    """What a bundle's ``competition.yaml`` lacks for this template: a judge, or a judging prompt it
    can use."""
    if spec.judge is None:
        return [
            (
                "judge",
                "the judge template grades every answer with a judge model; add a judge: section naming it "
                "(connection, and model_id)",
            )
        ]
    problem = None if spec.judge.prompt is None else check_prompt(spec.judge.prompt)
    return [] if problem is None else [("judge.prompt", problem)]


def build(options: ScoringOptions) -> Judge:
    return make_judge(options.judgments)


class JudgeAggregator(Aggregator):
    """Accuracy and the mean score over the judged cases (none when none was), how many were and were not
    judged, and each criterion's pass rate."""

    def __init__(self) -> None:
        super().__init__()
        self.score_sum = ExactSum()  # over the judged cases
        # criterion id -> [cases judged on it, passed], in the order the criteria first appear
        self.criteria: dict[str, list[int]] = {}

    def add(self, verdict: VerdictRecord, case: Case, prediction: Prediction | None) -> None:
        super().add(verdict, case, prediction)
        if is_unjudged(verdict):
            return
        self.score_sum.add(verdict.score)
        for mark in verdict.criteria:
            if mark.passed is not None:
                counts = self.criteria.setdefault(mark.id, [0, 0])
                counts[0] += 1
                counts[1] += mark.passed

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "score_sum": self.score_sum.state(),
            "criteria": [[name, *counts] for name, counts in self.criteria.items()],
        }

    def merge(self, state: Mapping[str, Any]) -> None:
        super().merge(state)
        self.score_sum.merge(ExactSum.of(state["score_sum"]))
        for name, judged, passed in state["criteria"]:
            counts = self.criteria.setdefault(name, [0, 0])
            counts[0] += judged
            counts[1] += passed

    def scores(self) -> dict[str, float | None]:
        judged = self.total - self.unjudged
        return {
            "accuracy": rate(self.passed, judged) if judged else None,
            "mean_score": self.score_sum.mean(judged) if judged else None,
            "answer_rate": rate(self.answered, self.total),
            "judged": float(judged),
            "unjudged": float(self.unjudged),
            "total": float(self.total),
        }

    def no_score(self) -> str | None:
        return NOTHING_JUDGED if self.total == self.unjudged else None

    def breakdowns(self) -> dict[str, dict[str, dict[str, float]]]:
        """Adds ``criterion``: each criterion's judged cases, passes and pass rate."""
        result = super().breakdowns()
        if self.criteria:
            result["criterion"] = {
                name: {"total": float(judged), "passed": float(passed), "rate": rate(passed, judged)}
                for name, (judged, passed) in sorted(capped(self.criteria, add_counts).items())
            }
        return result


TEMPLATE = TemplateDefinition(
    "judge",
    build,
    JudgeAggregator,
    case_fields=("rubric", "reference"),
    judged=(),
    case_type=JudgeCase,
    asks=ASKS,
    case_criteria=lambda case: tuple(criterion.id for criterion in case.rubric),
    spec_problems=spec_problems,
)
