"""The datasets table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page
from benchgen.records.datasets import DatasetRecord

if TYPE_CHECKING:
    # Only the answer's type: a table's importers (the API) need not load the artifact build.
    from benchgen.steps.artifact import ArtifactBuild

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


def artifact_answer(build: ArtifactBuild) -> dict[str, Any]:
    """The BuildArtifact task's answer as the artifact pipeline's SaveDataset state writes it: every
    field of the dataset as text, which the state maps into the attribute its field's type takes."""
    dataset = build.dataset
    return {
        "emitted": build.emitted,
        "reason": build.reason,
        "dataset": None
        if dataset is None
        else {name: str(value) for name, value in dataset.model_dump(mode="json").items()},
    }
