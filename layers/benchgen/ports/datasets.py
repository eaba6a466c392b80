"""The datasets table, as saving a run's dataset uses it and the API lists it."""

from __future__ import annotations

from typing import Protocol

from benchgen.ports.pages import Page
from benchgen.records.datasets import DatasetRecord


class DatasetsStore(Protocol):
    def get(self, dataset_id: str) -> DatasetRecord | None: ...

    def put_if_absent(self, record: DatasetRecord) -> bool:
        """Store a dataset; ``False`` (and nothing changed) when that dataset id is already saved."""
        ...


class DatasetsCatalog(DatasetsStore, Protocol):
    def list(
        self, *, kind: str | None = None, limit: int = ..., next_token: str | None = None
    ) -> Page[DatasetRecord]:
        """Datasets newest first, of one kind or of every kind."""
        ...
