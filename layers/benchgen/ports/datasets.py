"""The datasets table, as saving a run's dataset uses it."""

from __future__ import annotations

from typing import Protocol

from benchgen.records.datasets import DatasetRecord


class DatasetsStore(Protocol):
    def get(self, dataset_id: str) -> DatasetRecord | None: ...

    def put_if_absent(self, record: DatasetRecord) -> bool:
        """Store a dataset; ``False`` (and nothing changed) when that dataset id is already saved."""
        ...
