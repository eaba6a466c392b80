"""Calling a model with retries: exponential backoff on 5xx and network failures, and on throttling,
which slows a case down (and, through its shard's pacer, every case of the shard) without using up its
attempts: a throttled case gives up only when it has been throttled for ``Backoff.throttled_s``."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchgen.inference.model import Answer, ModelCallError
from benchgen.inference.pacing import Pacer


@dataclass(frozen=True)
class Backoff:
    """How hard to try: ``attempts`` failed calls at most, waits doubling from ``base_s`` up to ``cap_s``;
    throttled calls for ``throttled_s`` at most (within the 15 minutes of the function asking)."""

    attempts: int = 5
    base_s: float = 0.5
    cap_s: float = 20.0
    throttled_s: float = 600.0

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
    pacer: Pacer | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    deadline: float | None = None,
) -> Outcome:
    """Call until an answer, a failure that retrying cannot fix, the last attempt, the end of the
    time a case may be throttled, or ``deadline`` (on ``clock``), after which no call starts. With a
    ``pacer``, each call waits for its turn, and a throttled call pauses the pacer (every call of the
    shard) instead of sleeping alone."""
    first = clock()
    failures = throttles = calls = latency_ms = 0
    last: str | None = None
    while True:
        if deadline is not None and clock() >= deadline:
            return Outcome(None, latency_ms, calls, _out_of_time(last, calls))
        if pacer is not None and not pacer.acquire(deadline):
            return Outcome(None, latency_ms, calls, _out_of_time(last, calls, paced=True))
        calls += 1
        started = clock()
        try:
            answer = call()
        except ModelCallError as error:
            latency_ms = round((clock() - started) * 1000)
            last = str(error)
            tries = f"after {calls} attempt{'s' if calls > 1 else ''}"
            if error.throttled:
                wait = backoff.delay(throttles, error.retry_after)
                throttles += 1
                if clock() + wait - first > backoff.throttled_s:
                    if pacer is not None:
                        pacer.throttled(wait)
                    limit = f"still throttled after {backoff.throttled_s:.0f} s"
                    return Outcome(None, latency_ms, calls, f"{error} ({limit}, {tries})")
                if pacer is not None:
                    pacer.throttled(wait)
                else:
                    sleep(wait)
                continue
            if pacer is not None:
                pacer.failed()
            failures += 1
            if not error.retryable or failures == backoff.attempts:
                return Outcome(None, latency_ms, calls, f"{error} ({tries})")
            sleep(backoff.delay(failures - 1, error.retry_after))
            continue
        if pacer is not None:
            pacer.answered(_tokens(answer))
        return Outcome(answer, round((clock() - started) * 1000), calls)


def _out_of_time(last: str | None, calls: int, *, paced: bool = False) -> str:
    # A paced case gives up when its turn under the connection's rate limits would come too late.
    turn = "its turn under the connection's rate limits" if paced else "its turn"
    if last is None:
        return f"not asked: the step ran out of time before {turn} (its Lambda timeout was near)"
    tries = f"after {calls} attempt{'s' if calls > 1 else ''}"
    return f"{last} ({tries}; no time left for another before the step's Lambda timeout)"


def _tokens(answer: Answer) -> int | None:
    if answer.input_tokens is None and answer.output_tokens is None:
        return None
    return (answer.input_tokens or 0) + (answer.output_tokens or 0)
