"""What the steps need of providers, as the interfaces they call.

Each provider kind's adapter (``benchgen/aws/providers/<kind>.py``) is a :class:`ProviderAdapter`;
``benchgen.aws.providers.registry`` picks the one of a connection's kind. The steps take that choice as
the two factories below (:data:`JobsFor`, :data:`ModelFactory`), so a unit test hands them fakes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from benchgen.inference.model import Model
from benchgen.providers.batch import BatchJobSpec, BatchState
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


class BatchJobs(Protocol):
    """A live run's batch jobs at its provider."""

    def submit(self, spec: BatchJobSpec, records: Path) -> str:
        """Start ``spec``'s job on its ``records`` (also at ``spec.input_uri``, for a kind that reads them
        there): its id; a second submit of the same job name answers that job's id."""
        ...

    def describe(self, spec: BatchJobSpec, job_id: str) -> BatchState:
        """What the job is doing now."""
        ...

    def download(self, file_id: str, path: Path) -> Path:
        """A file a kind hands its output out in (``BatchState.output_file``), saved at ``path``."""
        ...


class ProviderAdapter(Protocol):
    """How one provider kind is reached: a connection's training jobs, a live run's model, and its batch
    jobs (a kind without batch inference raises the refusal its definition's ``batch_gap`` says)."""

    def training_jobs(self, connection: ConnectionRecord) -> TrainingJobs: ...

    def model(self, live: LiveModel, sampling: Sampling) -> Model: ...

    def batch_jobs(self, live: LiveModel) -> BatchJobs: ...


JobsFor = Callable[[ConnectionRecord], TrainingJobs]
ModelFactory = Callable[[LiveModel, Sampling], Model]
BatchFactory = Callable[[LiveModel], BatchJobs]
