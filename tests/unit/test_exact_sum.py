"""Float sums that merge exactly: any split of the values, merged, reads as the values summed at once."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from benchgen.scoring.float_sums import ExactSum

FINITE = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


def _sum(values: list[float]) -> ExactSum:
    total = ExactSum()
    for value in values:
        total.add(value)
    return total


def test_ten_tenths_make_one() -> None:
    # a running float sum of ten 0.1 gives 0.9999999999999999
    assert _sum([0.1] * 10).value() == 1.0
    assert _sum([0.1] * 10).mean(10) == 0.1


@given(st.lists(FINITE, max_size=40), st.integers(min_value=0, max_value=40))
def test_a_split_merged_reads_as_the_whole(values: list[float], cut: int) -> None:
    whole = _sum(values)
    merged = ExactSum.of(_sum(values[:cut]).state())
    merged.merge(ExactSum.of(_sum(values[cut:]).state()))
    exact = sum((Fraction(value) for value in values), Fraction(0))
    assert merged.value() == whole.value() == float(exact)
    assert merged.mean(len(values)) == (float(exact / len(values)) if values else 0.0)


def test_an_infinite_value_makes_the_sum_infinite_and_opposite_ones_make_it_nan() -> None:
    assert _sum([1.0, math.inf, 2.0]).value() == math.inf
    assert math.isnan(_sum([math.inf, 1.0, -math.inf]).mean(3))
