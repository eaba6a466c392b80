"""How fast a live run asks its model: the fan-out over shards, and the pacing inside one shard.

A run states how many requests may be in flight at once (``max_in_flight``) and, optionally, how many
requests and tokens a minute its provider allows. :func:`fanout` cuts the cases into shards and splits
the first bound between shards running at once (the Distributed Map's MaxConcurrency) and requests in
flight inside each shard, so that their product never exceeds it. A :class:`Pacer` holds one shard to
its share: at most its window of requests in flight, its share of the per-minute budgets, and, when the
provider throttles, a pause every request of the shard waits out and a window halved, then widened
again one request at a time as answers come back (additive increase, multiplicative decrease), so that
throttling slows the run down instead of failing its cases.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# A Distributed Map runs at most this many child executions at once.
MAX_SHARDS_AT_ONCE = 10_000
# A shard asks its cases in at most this many rounds of calls (its requests in flight x this many cases),
# so that its time is bounded the same whatever the run's concurrency: at one request in flight, 20
# cases one after another, within one function's 15 minutes for a model answering in 40 s or less.
ROUNDS_PER_SHARD = 20


@dataclass(frozen=True)
class Fanout:
    """Shards of ``shard_size`` cases, ``shards`` of them at once, each with at most ``per_shard``
    requests in flight."""

    shards: int
    per_shard: int
    shard_size: int

    @property
    def in_flight(self) -> int:
        return self.shards * self.per_shard


def fanout(
    cases: int, max_shard_size: int, max_in_flight: int, *, rounds_per_shard: int = ROUNDS_PER_SHARD
) -> Fanout:
    """The cut of ``cases`` into shards (of at most ``max_shard_size`` cases and ``rounds_per_shard``
    rounds) and the split of ``max_in_flight`` between shards at once and requests per shard that asks
    every case in the fewest rounds of model calls; of equal ones, the one with fewer requests in flight,
    then the one with fewer shards (each shard costs an execution and an invocation besides its calls)."""
    if cases < 1 or max_shard_size < 1 or max_in_flight < 1:
        raise ValueError("a fan-out needs at least one case, one case a shard and one request in flight")
    best: tuple[tuple[int, int, int], Fanout] | None = None
    for per in range(1, min(max_in_flight, max_shard_size) + 1):
        size = min(max_shard_size, per * rounds_per_shard, cases)
        count = math.ceil(cases / size)
        shards = min(max_in_flight // per, count, MAX_SHARDS_AT_ONCE)
        rounds = math.ceil(count / shards) * math.ceil(size / per)
        key = (rounds, shards * per, count)
        if best is None or key < best[0]:
            best = (key, Fanout(shards=shards, per_shard=per, shard_size=size))
    assert best is not None  # per = 1 is always a candidate
    return best[1]


@dataclass(frozen=True)
class Budget:
    """One shard's share of the run's bounds: requests in flight, and per-minute requests and tokens."""

    in_flight: int
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None


class Pacer:
    """Holds the requests of one shard (from its threads) to its :class:`Budget`; thread-safe."""

    def __init__(
        self,
        budget: Budget,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if budget.in_flight < 1:
            raise ValueError("a pacer needs at least one request in flight")
        self._budget = budget
        self._clock = clock
        self._changed = threading.Condition()
        self._window = budget.in_flight
        self._running = 0
        self._answered_in_window = 0
        self._paused_until = 0.0
        self._next_request_at = 0.0
        self._tokens = float(budget.tokens_per_minute or 0)
        self._tokens_at = clock()
        self.throttles = 0
        self.most_in_flight = 0

    @property
    def window(self) -> int:
        """The requests the shard may have in flight now (its budget, less while it is throttled)."""
        with self._changed:
            return self._window

    def acquire(self, deadline: float | None = None) -> bool:
        """Wait until one more request may go out, then count it as in flight. With a ``deadline`` (on the
        pacer's clock), a wait that would end after it does not begin, and a wait for a request to come
        back ends at it: ``False``, nothing counted."""
        with self._changed:
            while True:
                wait = self._wait_s()
                if wait <= 0:
                    break
                left = math.inf if deadline is None else deadline - self._clock()
                # A rate's wait is known in advance; the wait for a free place in the window is not.
                known = self._running < self._window
                if left <= 0 or (known and wait > left):
                    return False
                self._changed.wait(timeout=min(wait, 1.0, left))
            self._running += 1
            self.most_in_flight = max(self.most_in_flight, self._running)
            if self._budget.requests_per_minute:
                start = max(self._clock(), self._next_request_at)
                self._next_request_at = start + 60.0 / self._budget.requests_per_minute
            return True

    def _wait_s(self) -> float:
        now = self._clock()
        if self._running >= self._window:
            return 1.0  # until a request comes back and notifies
        waits = [self._paused_until - now, self._next_request_at - now]
        if self._budget.tokens_per_minute:
            self._refill(now)
            if self._tokens <= 0:
                waits.append(-self._tokens * 60.0 / self._budget.tokens_per_minute)
        return max(waits)

    def _refill(self, now: float) -> None:
        assert self._budget.tokens_per_minute
        rate = self._budget.tokens_per_minute / 60.0
        self._tokens = min(self._budget.tokens_per_minute, self._tokens + (now - self._tokens_at) * rate)
        self._tokens_at = now

    def answered(self, tokens: int | None) -> None:
        """A request came back with an answer that used ``tokens`` (when the provider counted them)."""
        with self._changed:
            self._running -= 1
            if self._budget.tokens_per_minute and tokens:
                self._refill(self._clock())
                self._tokens -= tokens
            self._answered_in_window += 1
            if self._answered_in_window >= self._window and self._window < self._budget.in_flight:
                self._window += 1
                self._answered_in_window = 0
            self._changed.notify_all()

    def failed(self) -> None:
        """A request came back without an answer, for a reason other than the rate."""
        with self._changed:
            self._running -= 1
            self._changed.notify_all()

    def throttled(self, wait_s: float) -> None:
        """The provider refused a request for the rate: every request of the shard waits ``wait_s``, and
        the window halves."""
        with self._changed:
            self._running -= 1
            self.throttles += 1
            self._paused_until = max(self._paused_until, self._clock() + wait_s)
            self._window = max(1, self._window // 2)
            self._answered_in_window = 0
            self._changed.notify_all()
