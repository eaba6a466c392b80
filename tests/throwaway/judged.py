"""The throwaway template as a template that asks a judge: the same cases and aggregator, but a case's
verdict is read from what the judging pass's judge said of its answer (``ScoringOptions.judgments``),
never from the answer itself. A judge's answer can be read when it is not blank; the case passes when
the judge gave one, and its detail is the judge's text, so a test sees which judgments scoring read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.judging import JudgeRecord, JudgeSettings
from benchgen.scoring.templates import Judge, ScoringOptions, case_verdict, judging
from benchgen.verdicts import VerdictRecord
from tests.throwaway import template
from tests.throwaway.template import JUDGED, ColourCase

UNJUDGED = "unjudged"


class ColourJudge:
    """Asks the judge whether an answer names the flag's colours."""

    prompt_fields: tuple[str, ...] = ("question", "answer")

    def prompt(self, case: Case, answer: str, settings: JudgeSettings, problem: str | None = None) -> str:
        again = f" (Your last reply could not be read: {problem})" if problem else ""
        return f"Does the answer {answer!r} name every colour asked by {case.question!r}?{again}"

    def problem(self, case: Case, text: str) -> str | None:
        return None if text.strip() else "the reply is blank: say whether it names every colour"


def _build(options: ScoringOptions) -> Judge:
    judgments: Mapping[str, JudgeRecord] = options.judgments or {}

    def judge(
        case: ColourCase, prediction: Prediction | None, criteria: Sequence[Criterion]
    ) -> VerdictRecord:
        record = judgments.get(case.id)
        read = record.read if record is not None else None
        raw = prediction.prediction_text if prediction is not None else ""
        return case_verdict(
            case,
            criteria,
            gold=" ".join(case.colours),
            prediction=raw or None,
            raw_prediction=raw,
            passed=read is not None,
            answered=bool(raw),
            near_miss=False,
            score=1.0 if read is not None else 0.0,
            detail=read.text if read is not None else UNJUDGED,
            judged=(JUDGED, (read is not None, None)),
        )

    return judging(ColourCase, judge)


TEMPLATE = replace(template.TEMPLATE, build=_build, asks=ColourJudge())
