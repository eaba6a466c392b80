"""The comparison's statistics against values worked out by hand here, independently of the code."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.compare.stats import (
    Interval,
    SourceCase,
    holm,
    mcnemar_exact,
    min_discordant,
    minimum_detectable_effect,
    paired_bootstrap,
    percentile,
)

# z(0.975) and z(0.80), from the standard normal table
Z_A = 1.959963984540054
Z_B = 0.8416212335729143


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        # P[X <= 1], X ~ Bin(10, 1/2) = (1 + 10) / 1024, doubled
        (1, 9, 2 * (1 + 10) / 1024),
        (9, 1, 2 * (1 + 10) / 1024),
        # all five changes one way: 2 * (1/2)^5
        (0, 5, 0.0625),
        # n = 15, k <= 3: (1 + 15 + 105 + 455) / 32768, doubled
        (3, 12, 2 * 576 / 32768),
        # a balanced table: the doubled tail passes 1 and is capped
        (4, 4, 1.0),
        (0, 0, 1.0),
    ],
)
def test_mcnemar_exact_p_values_match_the_binomial_tail(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == expected


def test_mcnemar_exact_stays_exact_for_many_discordant_pairs() -> None:
    # the same tail for n = 200, k <= 80, summed with math.comb and divided exactly
    tail = sum(math.comb(200, k) for k in range(81))
    assert mcnemar_exact(80, 120) == float(Fraction(2 * tail, 2**200))


def test_six_changes_are_the_fewest_that_can_reach_five_percent() -> None:
    # 2 * (1/2)^5 = 0.0625 is not below 0.05; 2 * (1/2)^6 = 0.03125 is
    assert min_discordant(0.05) == 6
    assert min_discordant(0.01) == 8  # 2/128 = 0.0156 is not below 0.01; 2/256 = 0.0078 is


def test_holm_adjusts_in_step_down_order_and_keeps_the_given_order() -> None:
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> raised to 0.06 (monotone)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_and_handles_no_tests() -> None:
    assert holm([0.5, 0.6]) == [1.0, 1.0]
    assert holm([]) == []


def test_percentile_interpolates_between_order_statistics() -> None:
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0.5) == 2.0
    assert percentile(values, 0.025) == pytest.approx(0.1)  # position 4 * 0.025 = 0.1
    assert percentile(values, 0.975) == pytest.approx(3.9)


def _sources(fixed: int, broken: int, same_pass: int, same_fail: int) -> list[SourceCase]:
    return (
        [SourceCase(1, 0, 1)] * fixed
        + [SourceCase(1, 1, 0)] * broken
        + [SourceCase(1, 1, 1)] * same_pass
        + [SourceCase(1, 0, 0)] * same_fail
    )


def test_bootstrap_on_a_fixed_seed_gives_the_same_interval_every_time() -> None:
    sources = _sources(12, 2, 33, 3)

    first = paired_bootstrap(sources, resamples=500, seed=7)
    again = paired_bootstrap(sources, resamples=500, seed=7)
    other = paired_bootstrap(sources, resamples=500, seed=8)

    assert first == again
    assert other != first


def test_bootstrap_interval_contains_the_observed_difference() -> None:
    sources = _sources(12, 2, 33, 3)  # observed difference (12 - 2) / 50 = 0.2

    interval = paired_bootstrap(sources)

    assert interval.low < 0.2 < interval.high
    assert interval.low > 0  # ten more fixed than broken out of fifty is clear of zero


def test_bootstrap_interval_narrows_as_cases_grow() -> None:
    small = paired_bootstrap(_sources(12, 2, 33, 3))
    large = paired_bootstrap(_sources(120, 20, 330, 30))  # same shares, ten times the cases

    def width(interval: Interval) -> float:
        return interval.high - interval.low

    assert width(large) < width(small) / 2  # about 1 / sqrt(10) of it
    assert large.low < 0.2 < large.high


def test_bootstrap_keeps_the_cases_of_one_source_together() -> None:
    # the same 500 outcomes, either as 50 sources of 10 identical variants or as 500 separate cases
    grouped = [SourceCase(10, 0, 10)] * 6 + [SourceCase(10, 10, 10)] * 40 + [SourceCase(10, 0, 0)] * 4
    separate = _sources(60, 0, 400, 40)

    clustered = paired_bootstrap(grouped)
    independent = paired_bootstrap(separate)

    # resampling sources, ten copies of one case count as one draw: the interval is as wide as 50 cases
    assert (clustered.high - clustered.low) > 2 * (independent.high - independent.low)


def test_bootstrap_refuses_nothing_to_resample() -> None:
    with pytest.raises(ValueError, match="at least one compared case"):
        paired_bootstrap([])
    with pytest.raises(ValueError, match="at least one resample"):
        paired_bootstrap(_sources(1, 0, 0, 0), resamples=0)


def test_minimum_detectable_effect_on_a_known_input() -> None:
    # n = 100, psi = 0.2, worked by hand:
    # sqrt(0.2) * (1.95996 * 10 + 0.84162 * sqrt(100 - 3.84146 + 0.70833)) / (100 + 0.70833) = 0.123819
    effect = minimum_detectable_effect(100, 0.2)

    assert effect == pytest.approx(0.123819, abs=1e-6)
    # and it is the d for which Connor's sample size for paired proportions gives back n = 100
    assert effect is not None
    n = (Z_A * math.sqrt(0.2) + Z_B * math.sqrt(0.2 - effect**2)) ** 2 / effect**2
    assert n == pytest.approx(100)


def test_minimum_detectable_effect_shrinks_like_one_over_root_n() -> None:
    small = minimum_detectable_effect(100, 0.2)
    large = minimum_detectable_effect(10_000, 0.2)

    assert small is not None and large is not None
    assert large == pytest.approx(math.sqrt(0.2) * (Z_A + Z_B) / 100, rel=0.01)


def test_minimum_detectable_effect_is_undefined_without_changes_or_cases() -> None:
    assert minimum_detectable_effect(100, 0.0) is None
    assert minimum_detectable_effect(3, 0.5) is None  # n <= z_a^2 - z_b^2 = 3.13


@given(st.integers(0, 60), st.integers(0, 60))
def test_mcnemar_is_symmetric_and_a_probability(b: int, c: int) -> None:
    p_value = mcnemar_exact(b, c)
    assert p_value == mcnemar_exact(c, b)
    assert 0 < p_value <= 1
    if b != c:  # one more change on the side already ahead makes the evidence stronger
        assert mcnemar_exact(min(b, c), max(b, c) + 1) < p_value


@given(st.lists(st.floats(0, 1, allow_nan=False), max_size=30))
def test_holm_never_lowers_a_p_value_caps_at_one_and_keeps_their_order(p_values: list[float]) -> None:
    adjusted = holm(p_values)
    assert all(raw <= adj <= 1 for raw, adj in zip(p_values, adjusted, strict=True))
    for i, first in enumerate(p_values):
        for j, second in enumerate(p_values):
            if first < second:
                assert adjusted[i] <= adjusted[j]
