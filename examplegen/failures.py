"""Which cases a generated submission gets wrong.

Failures are spread evenly: in every block of ten consecutive cases exactly three are wrong (and a short
last block gets its rounded share), so any size, even ten cases, fails about 30% of them while the positions
still look random.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

BLOCK = 10
FAILING_PER_BLOCK = 3


def failure_plan(rng: random.Random, total: int) -> Iterator[bool]:
    """Yields, case by case, whether the submission should get that case wrong."""
    for start in range(0, total, BLOCK):
        size = min(BLOCK, total - start)
        failing = round(size * FAILING_PER_BLOCK / BLOCK)
        marks = [True] * failing + [False] * (size - failing)
        rng.shuffle(marks)
        yield from marks


def pick(rng: random.Random, weighted: list[tuple[str, int]]) -> str:
    """One name from ``(name, weight)`` pairs."""
    names = [name for name, _ in weighted]
    weights = [weight for _, weight in weighted]
    return rng.choices(names, weights=weights, k=1)[0]
