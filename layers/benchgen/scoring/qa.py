"""The ``qa`` template, following SQuAD v2 conventions. Every metric is a fraction in [0, 1].

Answers are normalised before comparison: lower-cased, punctuation removed, the articles a/an/the
removed, whitespace collapsed. Exact match and token F1 take the best value over the gold answers.
A case whose ``answers`` list is empty is unanswerable: the right prediction is the empty string, and a
prediction whose ``no_answer_probability`` is above the threshold (0.5 by default) counts as empty.
A case without ``answers`` falls back to its ``answer`` (empty = unanswerable).

A case passes on exact match; its score is its F1. Near miss: failed, but F1 >= 0.5.

Criteria it judges, by id (any other criterion id is recorded unjudged):
- ``exact-answer``: the answer matches a gold answer exactly (the case's pass);
- ``grounded-answer``: the answer, normalised, is a run of whole words of the normalised context (unjudged
  when there is no answer or no context);
- ``abstain-when-unanswerable``: on an unanswerable case, the model gave no answer (unjudged on a case that
  has an answer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.float_sums import ExactSum
from benchgen.scoring.qa_answer import acceptable_answers, best_scores, normalize_answer
from benchgen.scoring.templates import Aggregator, Judge, TemplateDefinition, case_verdict, rate, unconfigured
from benchgen.verdicts import VerdictRecord

NEAR_MISS_F1 = 0.5
EXACT_ANSWER = "exact-answer"
GROUNDED_ANSWER = "grounded-answer"
ABSTAINS = "abstain-when-unanswerable"
JUDGED = (EXACT_ANSWER, GROUNDED_ANSWER, ABSTAINS)
NO_ANSWER = "(no answer)"  # the gold of an unanswerable case


def gold_answers(case: Case) -> list[str]:
    """Acceptable answers; an empty list means the question has no answer in its context."""
    return acceptable_answers(case.answers, case.answer)


def grounded(answer: str, context: str | None) -> bool | None:
    """Whether the normalised ``answer`` is a run of whole words of the normalised ``context``."""
    words = normalize_answer(answer)
    if not words or not context:
        return None
    return f" {words} " in f" {normalize_answer(context)} "


def make_judge(no_answer_threshold: float = 0.5) -> Judge:
    def judge(case: Case, prediction: Prediction | None, criteria: Sequence[Criterion]) -> VerdictRecord:
        raw = prediction.prediction_text if prediction is not None else ""
        abstains = (
            prediction is not None
            and prediction.no_answer_probability is not None
            and prediction.no_answer_probability > no_answer_threshold
        )
        given = "" if abstains else raw
        answerable = gold_answers(case)
        golds = answerable or [""]
        exact, f1 = best_scores(answerable, given)
        passed = exact == 1.0
        answered = bool(normalize_answer(given))
        if prediction is None:
            detail = "no prediction"
        elif abstains:
            probability = prediction.no_answer_probability
            detail = f"abstained (no_answer_probability {probability} > {no_answer_threshold})"
        else:
            detail = f"F1 {f1:.2f}"
        return case_verdict(
            case,
            criteria,
            gold=" | ".join(golds) if golds != [""] else NO_ANSWER,
            prediction=given if answered else None,
            raw_prediction=raw,
            passed=passed,
            answered=answered,
            near_miss=not passed and f1 >= NEAR_MISS_F1,
            score=f1,
            detail=detail,
            judged=(JUDGED, (passed, grounded(given, case.context), None if answerable else not answered)),
        )

    return judge


class QaAggregator(Aggregator):
    def __init__(self) -> None:
        super().__init__()
        self.f1_sum = ExactSum()
        # has_answer / no_answer: [cases, exact], and their F1 sums
        self.buckets = {"has_answer": [0, 0], "no_answer": [0, 0]}
        self.bucket_f1 = {"has_answer": ExactSum(), "no_answer": ExactSum()}

    def add(self, verdict: VerdictRecord, case: Case, prediction: Prediction | None) -> None:
        super().add(verdict, case, prediction)
        self.f1_sum.add(verdict.score)
        # The verdict tells, unless an answer is literally written "(no answer)".
        answerable = verdict.gold != NO_ANSWER or bool(gold_answers(case))
        name = "has_answer" if answerable else "no_answer"
        bucket = self.buckets[name]
        bucket[0] += 1
        bucket[1] += verdict.passed
        self.bucket_f1[name].add(verdict.score)

    def state(self) -> dict[str, Any]:
        return {
            **super().state(),
            "f1_sum": self.f1_sum.state(),
            "buckets": {
                name: [*counts, self.bucket_f1[name].state()] for name, counts in self.buckets.items()
            },
        }

    def merge(self, state: Mapping[str, Any]) -> None:
        super().merge(state)
        self.f1_sum.merge(ExactSum.of(state["f1_sum"]))
        for name, (cases, exact, f1) in state["buckets"].items():
            self.buckets[name][0] += cases
            self.buckets[name][1] += exact
            self.bucket_f1[name].merge(ExactSum.of(f1))

    def scores(self) -> dict[str, float]:
        result = {
            "exact_match": rate(self.passed, self.total),
            "f1": self.f1_sum.mean(self.total),
            "answer_rate": rate(self.answered, self.total),
            "total": float(self.total),
        }
        for name, (cases, exact) in self.buckets.items():
            result[f"{name}_total"] = float(cases)
            if cases:
                result[f"{name}_exact"] = rate(exact, cases)
                result[f"{name}_f1"] = self.bucket_f1[name].mean(cases)
        return result


TEMPLATE = TemplateDefinition(
    "qa", unconfigured(make_judge()), QaAggregator, case_fields=("answer", "answers"), judged=JUDGED
)
