"""The statistics of a paired before/after comparison, in the standard library only.

Both runs judged the same cases, so every test here is paired: what carries information is the cases whose
outcome changed (b = passed before and failed after, c = failed before and passed after), not the two
accuracies taken apart.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

ALPHA = 0.05
POWER = 0.80
LEVEL = 0.95
# 2,000 resamples put 50 resampled differences beyond each end of a 95% interval (Efron and Tibshirani
# suggest 1,000 to 2,000 for percentile intervals). Measured over 30 seeds on 50 cases (12 fixed, 2
# broken), the endpoints moved by at most one case (2 points), against three cases with 200 resamples; on
# 1,000 cases by 0.3 points. Ten thousand cases take about 4 seconds in plain Python.
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 20260601
GENERATOR = (
    "random.Random(seed) (Mersenne Twister); each resample draws as many source cases as there are, with "
    "replacement, by Random.choices"
)
MDE_RULE = (
    f"smallest difference in accuracy d that a two-sided McNemar test at alpha {ALPHA} detects with "
    f"{POWER:.0%} power for n paired cases and discordance rate psi (the share of cases whose outcome "
    "changed, as observed), from Connor's sample size for paired proportions "
    "n = (z_a*sqrt(psi) + z_b*sqrt(psi - d^2))^2 / d^2 solved for d: "
    "d = sqrt(psi) * (z_a*sqrt(n) + z_b*sqrt(n - z_a^2 + z_b^2)) / (n + z_b^2), "
    "with z_a = z(1 - alpha/2), z_b = z(power)"
)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: min(1, 2 * P[X <= min(b, c)]) with X ~ Bin(b + c, 1/2).

    Summed in whole numbers and divided once, so it is exact however many cases changed.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = 0
    term = 1  # C(n, k), starting at k = 0
    for k in range(min(b, c) + 1):
        tail += term
        term = term * (n - k) // (k + 1)
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def min_discordant(alpha: float = ALPHA) -> int:
    """The fewest changed cases at which McNemar's exact test can reach ``alpha`` at all (all one way)."""
    changed = 1
    while mcnemar_exact(0, changed) >= alpha:
        changed += 1
    return changed


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given: the i-th smallest of m p-values is multiplied by
    m - i + 1, kept at least as large as the adjusted values before it, and capped at 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolating linearly between order statistics at (n - 1) * q."""
    if not ordered:
        raise ValueError("no values to take a percentile of")
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class SourceCase:
    """One source case: how many of its compared cases there are and how many passed in each run."""

    cases: int
    passed_before: int
    passed_after: int


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def paired_bootstrap(
    sources: Sequence[SourceCase],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = LEVEL,
) -> Interval:
    """Percentile interval of accuracy after minus accuracy before, resampling source cases.

    A source case keeps its before and after outcomes together (that is the pairing), and all the cases
    that came from it travel together. The same sources, resamples and seed give the same interval.
    """
    if resamples < 1:
        raise ValueError(f"the bootstrap needs at least one resample, got {resamples}")
    if not sources or not any(source.cases for source in sources):
        raise ValueError("the bootstrap needs at least one compared case")
    rng = random.Random(seed)  # noqa: S311 - a reproducible resampling, not a secret
    indices = range(len(sources))
    sizes = [source.cases for source in sources]
    gains = [source.passed_after - source.passed_before for source in sources]
    differences = []
    for _ in range(resamples):
        picks = rng.choices(indices, k=len(sources))
        cases = sum(map(sizes.__getitem__, picks))
        differences.append(sum(map(gains.__getitem__, picks)) / cases if cases else 0.0)
    differences.sort()
    tail = (1 - level) / 2
    return Interval(percentile(differences, tail), percentile(differences, 1 - tail))


def minimum_detectable_effect(
    n: int, discordance: float, *, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The MDE of :data:`MDE_RULE`, or None when it is undefined: no case changed (psi = 0, so nothing
    tells how often outcomes move) or too few cases for the normal approximation (n <= z_a^2 - z_b^2)."""
    z_a = NormalDist().inv_cdf(1 - alpha / 2)
    z_b = NormalDist().inv_cdf(power)
    if discordance <= 0 or n <= z_a**2 - z_b**2:
        return None
    effect = math.sqrt(discordance) * (z_a * math.sqrt(n) + z_b * math.sqrt(n - z_a**2 + z_b**2))
    return effect / (n + z_b**2)
