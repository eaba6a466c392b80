"""A dependency-free progress bar for long scoring runs, drawn on stderr.

It draws only when someone can see it (stderr is a terminal) or when the run is large enough that a log
benefits from it, and at most a few times a second, so a million progress callbacks cost next to nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

LARGE_RUN = 100_000
BAR_WIDTH = 30


class ProgressBar:
    """Callable with the number of cases done so far; ``close()`` finishes the line."""

    def __init__(
        self,
        total: int,
        *,
        label: str = "scoring",
        stream: TextIO | None = None,
        interval_s: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = max(total, 0)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.interval_s = interval_s
        self._clock = clock
        self._started = clock()
        self._last_draw: float | None = None
        self._done = 0
        self.draws = 0
        is_tty = getattr(self.stream, "isatty", lambda: False)()
        self.enabled = bool(is_tty) or self.total >= LARGE_RUN

    def __call__(self, done: int) -> None:
        self._done = done
        if not self.enabled:
            return
        now = self._clock()
        if self._last_draw is not None and now - self._last_draw < self.interval_s:
            return
        self._last_draw = now
        self._draw(now, end="")

    def close(self) -> None:
        if self.enabled and self.draws:
            self._draw(self._clock(), end="\n")

    def render(self, now: float) -> str:
        elapsed = max(now - self._started, 1e-9)
        rate = self._done / elapsed
        if self.total:
            fraction = min(self._done / self.total, 1.0)
            filled = round(fraction * BAR_WIDTH)
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            counts = f"{self._done:,}/{self.total:,} cases"
            return f"{self.label} [{bar}] {fraction:4.0%} {counts}  {rate:,.0f} cases/s"
        return f"{self.label} {self._done:,} cases  {rate:,.0f} cases/s"

    def _draw(self, now: float, *, end: str) -> None:
        self.stream.write("\r" + self.render(now) + end)
        self.stream.flush()
        self.draws += 1
