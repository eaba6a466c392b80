"""The ``math`` template: extract the final answer and compare it with the gold value.

- accuracy: the extracted answer equals the gold value as a number; a textual gold answer ("B") is
  compared case-insensitively, ignoring spaces and surrounding punctuation. Where the answer is found
  is :mod:`benchgen.scoring.extract`; how it is read, :mod:`benchgen.scoring.numbers`; how it is compared,
  :mod:`benchgen.scoring.math_answer`. A separator that the output's own numbers disambiguate has one
  reading; only when the output shows no decimal style does either reading of ``1.730`` count (the gold
  decides). An output that hedges between values or states different final answers without correcting
  itself is answered, and wrong whatever the gold.
- exact_match: the extracted answer, as written, equals the gold answer string.
- answer_rate: an answer could be extracted at all.
- duration: the prediction output's ``execution_time`` (seconds), 0 when it gives none.

Criteria it judges, by id (any other criterion id is recorded unjudged):
- ``final-answer``: the final answer equals the gold value (the case's pass);
- ``answer-format``: the response states one final answer after a marker ("####", \\boxed{}, an answer
  word such as "Answer:" or "Cevap:"), whatever its value: not hedged, and not only a last number.

Near miss (used by the ``failed_and_near_miss`` selection): a case that *passed* although its answer was
only found by the lenient last-number fallback (no "####", \\boxed or answer marker), or a case that
*failed* with a numeric answer within 1% of the gold value (relative error < 0.01; for a gold value of 0,
an absolute error < 0.01).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.extract import format_decimal
from benchgen.scoring.math_answer import judge_answer
from benchgen.scoring.templates import Aggregator, TemplateDefinition, case_verdict, rate, unconfigured
from benchgen.verdicts import VerdictRecord

FINAL_ANSWER = "final-answer"
ANSWER_FORMAT = "answer-format"
JUDGED = (FINAL_ANSWER, ANSWER_FORMAT)
_WHERE = {
    "boxed": "from \\boxed{}",
    "hashes": "after ####",
    "marker": "after the answer marker",
    "last_number": "last number in the text",
}


def judge(case: Case, prediction: Prediction | None, criteria: Sequence[Criterion]) -> VerdictRecord:
    raw = prediction.prediction_text if prediction is not None else ""
    answer, gold, passed, exact, near_miss = judge_answer(case.answer, raw)
    if answer is None:
        detail = "no prediction" if prediction is None else "no final answer found"
    elif answer.hedged:
        detail = f"hedged between {answer.text} ({_WHERE[answer.source]}): wrong whatever the gold"
    else:
        read = format_decimal(answer.value) if answer.value is not None else answer.text
        detail = f"read {read} ({_WHERE[answer.source]})" + ("; exact match" if exact else "")
    return case_verdict(
        case,
        criteria,
        gold=gold,
        prediction=None if answer is None else answer.text,
        raw_prediction=raw,
        passed=passed,
        answered=answer is not None,
        near_miss=near_miss,
        detail=detail,
        judged=(JUDGED, (passed, answer is not None and not answer.hedged and not answer.lenient)),
    )


class MathAggregator(Aggregator):
    def __init__(self, metadata: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.exact = 0
        self.duration = 0.0
        self.set_metadata(metadata or {})

    def set_metadata(self, metadata: Mapping[str, Any]) -> None:
        duration = metadata.get("execution_time")
        numeric = isinstance(duration, int | float) and not isinstance(duration, bool)
        self.duration = float(duration) if numeric and duration is not None else 0.0

    def add(self, verdict: VerdictRecord, case: Case, prediction: Prediction | None) -> None:
        super().add(verdict, case, prediction)
        self.exact += verdict.answered and verdict.prediction == verdict.gold

    def state(self) -> dict[str, Any]:
        return {**super().state(), "exact": self.exact, "duration": self.duration}

    def merge(self, state: Mapping[str, Any]) -> None:
        super().merge(state)
        self.exact += state["exact"]
        self.duration = state["duration"]  # every part's prediction output carries the run's metadata

    def scores(self) -> dict[str, float]:
        return {
            "accuracy": rate(self.passed, self.total),
            "exact_match": rate(self.exact, self.total),
            "answer_rate": rate(self.answered, self.total),
            "duration": self.duration,
            "correct": float(self.passed),
            "total": float(self.total),
            "near_misses": float(self.near_misses),
        }


TEMPLATE = TemplateDefinition(
    "math", unconfigured(judge), MathAggregator, case_fields=("answer",), judged=JUDGED
)
