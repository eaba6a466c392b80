"""The datasets table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page
from benchgen.records.datasets import DatasetRecord

#: Dataset kinds an unfiltered dataset list covers (one ``by_kind`` partition each).
DATASET_KINDS: tuple[str, ...] = ("finetune",)


class DatasetsRepo(Table):
    """Datasets (pk ``dataset_id``; GSI ``by_kind`` sorted by ``created_at``)."""

    def __init__(self, table_name: str, *, client: Any = None, kinds: Sequence[str] = DATASET_KINDS) -> None:
        super().__init__(table_name, client=client)
        self.kinds = tuple(kinds)

    def put_if_absent(self, record: DatasetRecord) -> bool:
        """Store a dataset; ``False`` (and nothing changed) when that dataset id is already saved."""
        return self._put_if_absent(record, "dataset_id")

    def get(self, dataset_id: str) -> DatasetRecord | None:
        return self._get(DatasetRecord, {"dataset_id": dataset_id})

    def list(
        self, *, kind: str | None = None, limit: int = 20, next_token: str | None = None
    ) -> Page[DatasetRecord]:
        """Datasets newest first, of one kind, or of every kind in ``self.kinds`` merged."""
        return self._newest_page(
            DatasetRecord,
            index="by_kind",
            partition_attribute="kind",
            partitions=[kind] if kind is not None else self.kinds,
            key_attribute="dataset_id",
            limit=limit,
            next_token=next_token,
        )
