"""A throwaway scoring template, ``throwaway``: a case names a flag's ``colours`` (a field of its own cases),
and the answer passes when it names every one, in any order. It stands where
``layers/benchgen/scoring/throwaway.py`` would, as the one module that defines everything the template is.

Criteria it judges, by id (any other criterion id is recorded unjudged): ``all-words``, the answer names
every colour (the case's pass); ``short-answer``, it has no more words than there are colours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.templates import (
    Aggregator,
    TemplateDefinition,
    case_verdict,
    judging,
    rate,
    unconfigured,
)
from benchgen.verdicts import VerdictRecord

ALL_WORDS = "all-words"
SHORT_ANSWER = "short-answer"
JUDGED = (ALL_WORDS, SHORT_ANSWER)


class ColourCase(Case, kw_only=True):
    """A case of this template: a case with the flag's colours."""

    colours: list[str] = msgspec.field(default_factory=list)


def judge(case: ColourCase, prediction: Prediction | None, criteria: Sequence[Criterion]) -> VerdictRecord:
    raw = prediction.prediction_text if prediction is not None else ""
    words = raw.casefold().split()
    gold = [colour.casefold() for colour in case.colours]
    found = sum(colour in words for colour in gold)
    passed = bool(gold) and found == len(gold)
    return case_verdict(
        case,
        criteria,
        gold=" ".join(case.colours),
        prediction=raw or None,
        raw_prediction=raw,
        passed=passed,
        answered=bool(words),
        near_miss=not passed and found > 0,
        score=found / len(gold) if gold else 0.0,
        detail=f"{found} of {len(gold)} colours",
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
    "throwaway",
    unconfigured(judging(ColourCase, judge)),
    WordsAggregator,
    case_fields=("colours",),
    judged=JUDGED,
    case_type=ColourCase,
)
