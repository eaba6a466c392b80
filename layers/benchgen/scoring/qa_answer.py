"""How close an answer to a qa case is to its gold answers: the ``qa`` template's rule over plain text
(SQuAD v2's normalisation, exact match and token F1).

The judge (:mod:`benchgen.scoring.qa`) turns these into a verdict; the reward and the standalone grader
read the F1. Standard library only: the standalone grader is built from this module's source.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_ASCII_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    lowered = text.lower()
    without_punctuation = "".join(
        " " if char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P") else char
        for char in lowered
    )
    return " ".join(_ARTICLES.sub(" ", without_punctuation).split())


def exact_score(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    predicted_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not predicted_tokens or not gold_tokens:
        return float(predicted_tokens == gold_tokens)
    common = sum((Counter(predicted_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted_tokens)
    recall = common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def acceptable_answers(answers: Sequence[str] | None, answer: str) -> list[str]:
    """A case's acceptable answers from its ``answers`` list, else its ``answer``; an empty list means the
    question has no answer in its context."""
    if answers is not None:
        return [each for each in answers if normalize_answer(each)]
    return [answer] if normalize_answer(answer) else []


def best_scores(golds: Sequence[str], given: str) -> tuple[float, float]:
    """The best exact match and the best token F1 of ``given`` over ``golds`` (an unanswerable case's
    only gold is the empty answer)."""
    candidates = list(golds) or [""]
    exact = max(exact_score(given, gold) for gold in candidates)
    f1 = max(f1_score(given, gold) for gold in candidates)
    return exact, f1
