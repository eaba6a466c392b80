"""The training runs table: each run moved through its statuses by conditional transitions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from benchgen.ports.pages import Page
from benchgen.records.training_runs import TrainingRunRecord, TrainingStatus


class TrainingRunsStore(Protocol):
    def get(self, training_run_id: str) -> TrainingRunRecord | None: ...

    def transition(
        self,
        training_run_id: str,
        status: TrainingStatus,
        *,
        provider_status: str | None = None,
        message: str | None = None,
        result_model: str | None = None,
        failure_reason: str | None = None,
    ) -> bool:
        """Move the run to ``status``, appending the change to its timeline; ``False`` (nothing changed)
        when the run is missing, already in ``status``, or already terminal."""
        ...

    def record_job(self, training_run_id: str, *, job_id: str) -> bool:
        """Keep the provider's id of the run's job; ``False`` if the run is missing or names another job."""
        ...

    def record_cost(self, training_run_id: str, cost: Mapping[str, float | str]) -> bool:
        """Set what the provider reports of the job's cost; ``False`` if the run is missing."""
        ...


class TrainingRunsCatalog(TrainingRunsStore, Protocol):
    """Training runs as the API launches, lists and cancels them."""

    def put_if_absent(self, record: TrainingRunRecord) -> bool:
        """Store a new training run; ``False`` (and nothing changed) when the id is taken."""
        ...

    def request_cancel(self, training_run_id: str, *, owner: str) -> bool:
        """Mark the run for cancelling; ``False`` unless ``owner`` owns it and it is not terminal yet."""
        ...

    def list(
        self,
        *,
        owner: str,
        preparation_id: str | None = None,
        limit: int = ...,
        next_token: str | None = None,
    ) -> Page[TrainingRunRecord]:
        """The owner's training runs, newest first; with ``preparation_id``, only those that trained its
        material."""
        ...
