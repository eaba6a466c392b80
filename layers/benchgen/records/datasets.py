"""Datasets: a run's finetune artifact, saved once per run."""

from __future__ import annotations

from pydantic import Field

from benchgen.lazy_model import LazyModel
from benchgen.records.timestamps import utc_now


def dataset_id_for(run_id: str) -> str:
    """One dataset per run: its id derives from the run id, so a second save collides."""
    return f"ds-{run_id}"


class DatasetRecord(LazyModel):
    dataset_id: str
    kind: str = "finetune"
    source: str = "benchmark"
    name: str
    run_id: str
    environment_id: str
    environment_version: str
    benchmark: str
    base_model: str
    selection_criterion: str
    example_count: int
    train_count: int
    validation_count: int
    test_count: int
    artifact_key: str
    artifact_sha256: str
    created_at: str = Field(default_factory=utc_now)
