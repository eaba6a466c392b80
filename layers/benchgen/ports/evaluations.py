"""The evaluations table, as the evaluation's steps use it."""

from __future__ import annotations

from typing import Protocol

from benchgen.records.evaluations import EvaluationRecord


class EvaluationsStore(Protocol):
    def get(self, evaluation_id: str) -> EvaluationRecord | None: ...

    def set_runs(
        self, evaluation_id: str, *, tuned_run_id: str, base_run_id: str, held_out_count: int
    ) -> bool:
        """Name the evaluation's two runs and its case count; only while it is Running."""
        ...
