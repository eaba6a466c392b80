"""A throwaway scoring template, ``throwaway``: the answer passes when it holds every word of the gold answer,
in any order. It stands where ``layers/benchgen/scoring/throwaway.py`` would, as the one module that
defines everything the template is.

Criteria it judges, by id (any other criterion id is recorded unjudged): ``all-words``, the answer holds
every word of the gold answer (the case's pass); ``short-answer``, it has no more words than the gold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.templates import Aggregator, TemplateDefinition, case_verdict, rate, unconfigured
from benchgen.verdicts import VerdictRecord

ALL_WORDS = "all-words"
SHORT_ANSWER = "short-answer"
JUDGED = (ALL_WORDS, SHORT_ANSWER)


def judge(case: Case, prediction: Prediction | None, criteria: Sequence[Criterion]) -> VerdictRecord:
    raw = prediction.prediction_text if prediction is not None else ""
    words = raw.casefold().split()
    gold = case.answer.casefold().split()
    found = sum(word in words for word in gold)
    passed = bool(gold) and found == len(gold)
    return case_verdict(
        case,
        criteria,
        gold=case.answer,
        prediction=raw or None,
        raw_prediction=raw,
        passed=passed,
        answered=bool(words),
        near_miss=not passed and found > 0,
        score=found / len(gold) if gold else 0.0,
        detail=f"{found} of {len(gold)} words",
        judged=(JUDGED, (passed, len(words) <= len(gold) if words else None)),
    )


class WordsAggregator(Aggregator):
    def __init__(self) -> None:
        super().__init__()
        self.words_found = 0

    def add(self, verdict: VerdictRecord, case: Case, prediction: Prediction | None) -> None:
        super().add(verdict, case, prediction)
        self.words_found += verdict.near_miss or verdict.passed

    def state(self) -> dict[str, Any]:
        return {**super().state(), "words_found": self.words_found}

    def merge(self, state: Mapping[str, Any]) -> None:
        super().merge(state)
        self.words_found += state["words_found"]

    def scores(self) -> dict[str, float]:
        return {
            "all_words_rate": rate(self.passed, self.total),
            "some_words_rate": rate(self.words_found, self.total),
            "total": float(self.total),
        }


TEMPLATE = TemplateDefinition(
    "throwaway", unconfigured(judge), WordsAggregator, case_fields=("answer",), judged=JUDGED
)
