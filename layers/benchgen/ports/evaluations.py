"""The evaluations table, as the evaluation's steps use it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from benchgen.records.evaluations import EvaluationRecord


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
