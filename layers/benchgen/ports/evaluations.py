"""The evaluations table, as the evaluation's steps use it and the API requests and grants evaluations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from benchgen.ports.pages import Page
from benchgen.records.evaluations import EvaluationGrant, EvaluationRecord


class EvaluationsStore(Protocol):
    def get(self, evaluation_id: str) -> EvaluationRecord | None: ...

    def set_runs(
        self, evaluation_id: str, *, tuned_run_id: str, base_run_id: str, held_out_count: int
    ) -> bool:
        """Name the evaluation's two runs and its case count; only while it is Running."""
        ...

    def complete(self, evaluation_id: str, *, found: Mapping[str, Any], finished_at: str) -> bool:
        """``Running`` -> ``Completed`` with what the comparison ``found`` (fields of the record); only while
        it is Running."""
        ...

    def fail(self, evaluation_id: str, *, reason: str, finished_at: str) -> bool:
        """``Running`` -> ``Failed`` with ``reason``; only while it is Running."""
        ...


class EvaluationsCatalog(EvaluationsStore, Protocol):
    """Evaluations as the API records and lists them, and the grants that let other users evaluate."""

    def create(self, record: EvaluationRecord) -> bool:
        """Store a new evaluation; ``False`` (and nothing changed) when the id is taken."""
        ...

    def list_for_training_run(
        self, training_run_id: str, *, limit: int = ..., next_token: str | None = None
    ) -> Page[EvaluationRecord]:
        """The training run's evaluations, whoever asked for them, newest first."""
        ...

    def put_grant(self, grant: EvaluationGrant) -> bool:
        """Record a grant; ``False`` (the first one kept) when this user was granted this run before."""
        ...

    def grant_for(self, training_run_id: str, user: str) -> EvaluationGrant | None: ...
