"""What the steps need of providers, as the interfaces they call.

Each provider kind's adapter (``benchgen/aws/providers/<kind>.py``) is a :class:`ProviderAdapter`;
``benchgen.aws.providers.registry`` picks the one of a connection's kind. The steps take that choice as
the two factories below (:data:`JobsFor`, :data:`ModelFactory`), so a unit test hands them fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from benchgen.inference.model import Model
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, JobState
from benchgen.records.runs import LiveModel
from benchgen.vocabulary import Sampling


class TrainingJobs(Protocol):
    """One connection's training jobs at its provider."""

    def upload(self, name: str, data: bytes) -> str | None:
        """Hand a training file to the provider: its file id, or None where files go to S3 instead."""
        ...

    def start(self, spec: JobSpec) -> JobState:
        """Start ``spec``'s job; a second start of the same job name returns that job, never a new one."""
        ...

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        """What the job is doing now."""
        ...

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        """Ask the provider to stop the job; its state after asking."""
        ...


class ProviderAdapter(Protocol):
    """How one provider kind is reached: a connection's training jobs, and a live run's model."""

    def training_jobs(self, connection: ConnectionRecord) -> TrainingJobs: ...

    def model(self, live: LiveModel, sampling: Sampling) -> Model: ...


JobsFor = Callable[[ConnectionRecord], TrainingJobs]
ModelFactory = Callable[[LiveModel, Sampling], Model]
