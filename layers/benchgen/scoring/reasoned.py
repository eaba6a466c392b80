"""A reasoning model's prediction, read for judging: its answer apart from its reasoning.

Every built-in template judges the answer only. The reasoning is the text of a ``<think>`` block in
``prediction_text`` (:mod:`benchgen.scoring.reasoning`) or the prediction's ``reasoning`` field (what a
live run's provider gave apart). A prediction cut off inside its block, or one whose reasoning came with
no answer at all, is unanswered: it fails without counting as a wrong answer (``answered`` false), and
no template's rule for an empty answer (a ``qa`` abstention) passes it. The verdict keeps the whole text
as ``raw_prediction`` and the reasoning in its own field.

A prediction without reasoning is judged as it is, and its verdict is the bytes it always was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.reasoning import THINK_OPEN, split_completion
from benchgen.scoring.templates import Judge
from benchgen.verdicts import CriterionMark, VerdictRecord

_TAG_END = THINK_OPEN[1:]
CUT_OFF = "cut off inside its reasoning block: no answer to judge"
ONLY_REASONING = "only reasoning, no answer: nothing to judge"


class Read(NamedTuple):
    """What a judge is given of a prediction with reasoning, and what it leaves out: the whole text, the
    reasoning and, when there is no answer to judge, why."""

    prediction: Prediction
    text: str
    reasoning: str
    unanswered: str | None = None


def read_prediction(prediction: Prediction | None) -> Read | None:
    """The answer part of ``prediction``, for a judge to read; None when there is no prediction or no
    reasoning to set apart (the judge reads it as it is)."""
    if prediction is None:
        return None
    text, given = prediction.prediction_text, prediction.reasoning or None
    # "think>" ends both tags: one test on the per-case path, which most predictions end at.
    if given is None and _TAG_END not in text:
        return None
    inline, answer = split_completion(text)
    if inline is None and given is None:
        return None
    reasoning = "\n\n".join(part for part in (given, inline) if part)
    judged = msgspec.structs.replace(prediction, prediction_text=answer or "", reasoning=None)
    if answer is None:
        return Read(judged, text, reasoning, CUT_OFF)
    if not answer.strip():
        return Read(judged, text, reasoning, ONLY_REASONING)
    return Read(judged, text, reasoning)


def _unanswered(verdict: VerdictRecord, why: str) -> VerdictRecord:
    """No answer: failed, no credit, and no criterion met (one the template left unjudged stays so)."""
    marks = tuple(mark if mark.passed is None else CriterionMark(mark.id, False) for mark in verdict.criteria)
    return msgspec.structs.replace(
        verdict,
        prediction=None,
        passed=False,
        answered=False,
        near_miss=False,
        score=0.0,
        criteria=marks,
        detail=why,
    )


def judge_read(judge: Judge, case: Case, read: Read, criteria: Sequence[Criterion]) -> VerdictRecord:
    """The template's verdict on what ``read`` gives it, with the whole text and the reasoning kept."""
    verdict = judge(case, read.prediction, criteria)
    # An answer a template reads from elsewhere than the text (a routing prediction's `route`) stands.
    if read.unanswered is not None and not verdict.answered:
        verdict = _unanswered(verdict, read.unanswered)
    return msgspec.structs.replace(verdict, raw_prediction=read.text, reasoning=read.reasoning)
