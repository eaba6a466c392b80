"""Whether an answer to a math case is right: the ``math`` template's rule over plain text.

The judge (:mod:`benchgen.scoring.math`) turns this judgment into a verdict; the reward and the standalone
grader read its ``passed``. Standard library only: the standalone grader is built from this module's
source.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import NamedTuple

from benchgen.scoring.extract import Extracted, extract_answer

NEAR_MISS_RELATIVE_ERROR = Decimal("0.01")

# Answers this short repeat across cases (gold values, bare-number outputs) and are remembered, at most
# _REMEMBERED of them: extraction is a pure function of the text, so a remembered answer is the same answer.
_SHORT = 32
_REMEMBERED = 1024


@functools.lru_cache(maxsize=_REMEMBERED)
def _extract_short(text: str) -> Extracted | None:
    return extract_answer(text)


def _extract(text: str) -> Extracted | None:
    return _extract_short(text) if len(text) <= _SHORT else extract_answer(text)


def _plain(text: str) -> str:
    return "".join(text.split()).strip(".,;:!?*_`$()[]{}'\"").casefold()


def read_gold(written: str) -> tuple[str, tuple[Decimal, ...]]:
    """The gold answer string and its numeric readings (none for a textual answer)."""
    written = written.strip()
    found = _extract(written)
    if found is None or found.value is None:
        return written, ()
    return found.text, found.values


def _close(answer: Extracted, gold_values: tuple[Decimal, ...]) -> bool:
    for value in answer.values:
        for gold in gold_values:
            error = abs(value - gold)
            if (error / abs(gold) if gold else error) < NEAR_MISS_RELATIVE_ERROR:
                return True
    return False


class MathJudgment(NamedTuple):
    """What the rule found: the answer read (None: none found), the gold answer as written, and whether
    the answer is right, written exactly as the gold, and a near miss. (A tuple: the judge makes one per
    case, and a tuple is the cheapest record to make.)"""

    answer: Extracted | None
    gold: str
    passed: bool
    exact: bool
    near_miss: bool


def judge_answer(gold: str, raw: str) -> MathJudgment:
    """Judge the model output ``raw`` against the case's gold answer ``gold``."""
    answer = _extract(raw) if raw.strip() else None
    gold_text, gold_values = read_gold(gold)
    if answer is None or answer.hedged:
        return MathJudgment(answer, gold_text, False, False, False)
    if gold_values:
        passed = bool(set(answer.values) & set(gold_values))
    else:
        passed = _plain(answer.text) == _plain(gold_text)
    near_miss = answer.lenient if passed else bool(gold_values) and _close(answer, gold_values)
    return MathJudgment(answer, gold_text, passed, answer.text == gold_text, near_miss)
