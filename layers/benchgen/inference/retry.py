"""Calling a model with retries: exponential backoff on throttling, 5xx and network failures."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchgen.inference.model import Answer, ModelCallError


@dataclass(frozen=True)
class Backoff:
    """How hard to try: ``attempts`` calls at most, waits doubling from ``base_s`` up to ``cap_s``."""

    attempts: int = 5
    base_s: float = 0.5
    cap_s: float = 20.0

    def delay(self, attempt: int, asked: float | None) -> float:
        """The wait before attempt ``attempt + 1``: the provider's Retry-After when it said one (never
        beyond the cap), else full jitter over the doubled base, so shards retrying together spread out."""
        if asked is not None:
            return min(max(asked, 0.0), self.cap_s)
        # Jitter only spreads retries out; it needs no unpredictability.
        return random.uniform(0, min(self.cap_s, self.base_s * 2**attempt))  # noqa: S311


@dataclass(frozen=True)
class Outcome:
    """What asking one case gave: an answer, or why there is none after every attempt."""

    answer: Answer | None
    latency_ms: int  # of the last attempt
    attempts: int
    error: str | None = None


def ask(
    call: Callable[[], Answer],
    backoff: Backoff,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Outcome:
    """Call until an answer, a failure that retrying cannot fix, or the last attempt."""
    for attempt in range(1, backoff.attempts + 1):
        started = clock()
        try:
            answer = call()
        except ModelCallError as error:
            latency_ms = round((clock() - started) * 1000)
            if not error.retryable or attempt == backoff.attempts:
                tries = f"after {attempt} attempt{'s' if attempt > 1 else ''}"
                return Outcome(None, latency_ms, attempt, f"{error} ({tries})")
            sleep(backoff.delay(attempt - 1, error.retry_after))
            continue
        return Outcome(answer, round((clock() - started) * 1000), attempt)
    raise AssertionError("unreachable: the loop returns on its last attempt")
