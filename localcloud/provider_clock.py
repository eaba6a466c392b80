"""Time for moto's training jobs: they run, then end, as the providers' own do.

moto keeps some jobs running forever and makes others end at once, so the training pipeline could not see
a job run and then end. While a :class:`ProviderClock` is installed, each provider kind's local fake
(``localcloud/providers/<kind>.py``) reads its jobs through the clock: a job is ``InProgress`` until it
has been read ``polls_to_complete`` times, then ``Completed`` with its result, or ``Failed`` with the
message :meth:`ProviderClock.fail` gave it; one it was told to :meth:`~ProviderClock.hold` never ends
(for timeout tests).

The fakes declare the moto methods they replace (private, so moto is pinned); entering the clock installs
them, leaving puts them back (see patches.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from importlib import import_module
from typing import Any, Literal, TypeVar

from benchgen import vocabulary
from benchgen.vocabulary import ProviderKind
from localcloud.patches import Patch, Patches

DEFAULT_POLLS_TO_COMPLETE = 2
FAKES = "localcloud.providers"

T = TypeVar("T")


class ProviderClock(Patches):
    """Advances moto's training jobs by the reads they get."""

    def __init__(self, polls_to_complete: int = DEFAULT_POLLS_TO_COMPLETE) -> None:
        super().__init__()
        self.polls_to_complete = polls_to_complete
        self._failures: dict[str, str] = {}
        self._held: set[str] = set()
        self._reads: dict[str, int] = {}
        self._lock = threading.Lock()
        self._states: dict[str, Any] = {}

    # what tests and the demo ask of it

    def fail(self, job_name: str, message: str) -> None:
        """The job named ``job_name`` ends ``Failed`` with ``message`` instead of completing."""
        with self._lock:
            self._failures[job_name] = message

    def hold(self, job_name: str) -> None:
        """The job named ``job_name`` stays ``InProgress`` however often it is read."""
        with self._lock:
            self._held.add(job_name)

    def state(self, name: str, make: Callable[[], T]) -> T:
        """The state a fake keeps under ``name`` (made by ``make`` when first asked for), which tests
        tune and read: it lives as long as the clock, across installs."""
        with self._lock:
            if name not in self._states:
                self._states[name] = make()
            found: T = self._states[name]
            return found

    def reads(self, job_name: str) -> int:
        """How many times the job named ``job_name`` has been read."""
        with self._lock:
            return self._reads.get(job_name, 0)

    def declare(self) -> Iterator[Patch]:
        """Every provider kind's local fake."""
        for kind in vocabulary.PROVIDER_KINDS:
            yield from import_module(f"{FAKES}.{ProviderKind(kind).module}").patches(self)

    # what the fakes ask of it

    def tick(self, job_name: str) -> Literal["Completed", "Failed"] | None:
        """Count one read of ``job_name``: "Completed" or "Failed" once it is due to end, else None."""
        with self._lock:
            reads = self._reads.get(job_name, 0) + 1
            self._reads[job_name] = reads
            if job_name in self._held or reads < self.polls_to_complete:
                return None
            return "Failed" if job_name in self._failures else "Completed"

    def failure(self, job_name: str) -> str:
        """The message the job named ``job_name`` fails with."""
        with self._lock:
            return self._failures[job_name]
