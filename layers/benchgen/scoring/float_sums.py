"""Float sums that merge exactly, so a run scored in parts reports what it reports scored whole.

A naive running sum depends on the order of its additions: summed in three parts and then added up, it may
differ from the same values summed in one pass by an ulp. Every finite double is an integer multiple of
2**-1074, so the sum is kept as that integer, exactly; it is rounded once, when it is read.
"""

from __future__ import annotations

import math

_SCALE = 1074  # every finite double is an integer multiple of 2**-1074


class ExactSum:
    """A sum of floats kept exactly; :meth:`value` and :meth:`mean` are correctly rounded."""

    __slots__ = ("_scaled", "_special")

    def __init__(self) -> None:
        self._scaled = 0
        self._special = 0.0  # what inf and nan add up to (0.0: none seen)

    def add(self, value: float) -> None:
        if not math.isfinite(value):
            self._special += value
            return
        numerator, denominator = value.as_integer_ratio()
        self._scaled += numerator << (_SCALE + 1 - denominator.bit_length())

    def merge(self, other: ExactSum) -> None:
        self._scaled += other._scaled
        self._special += other._special

    def value(self) -> float:
        return self._special if self._special else self._scaled / (1 << _SCALE)

    def mean(self, count: int) -> float:
        """The sum divided by ``count`` and rounded once (0.0 for no values, as ``rate`` gives)."""
        if not count:
            return 0.0
        return self._special if self._special else self._scaled / (count << _SCALE)

    def state(self) -> list[int | float]:
        return [self._scaled, self._special]

    @classmethod
    def of(cls, state: list[int | float]) -> ExactSum:
        total = cls()
        scaled, special = state
        total._scaled = int(scaled)
        total._special = float(special)
        return total
