"""What ``/datasets`` does, on the in-memory fakes: a run's finetune artifact is saved as its dataset once,
by its owner, linked to the run and announced; datasets are listed newest first by kind."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest

from benchgen.outputs import RunOutput
from benchgen.records.runs import ArtifactStatus, RunRecord, RunStatus
from benchgen.requests.datasets import dataset_or_404, list_datasets, save_dataset_for_run
from benchgen.requests.errors import Conflict, Forbidden, NotFound
from tests.api_services import Events, memory_services
from tests.fakes import MemoryDatasets, MemoryRuns, MemoryStore, Published
from tests.records import dataset

ARTIFACT_KEY = "runs/r1/finetune_artifact.zip"


def _artifact() -> bytes:
    manifest = {
        "kind": "finetune",
        "dataset_name": "GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026",
        "benchmark": "GSM8K",
        "run_id": "r1",
        "base_model": "Qwen2.5-7B-LoRA",
        "selection_criterion": "wrong_plus_augmented",
        "example_count": 200,
        "splits": {"counts": {"train": 160, "validation": 20, "test": 20}, "rule": "hash of the case id"},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("data/messages.jsonl", '{"messages": []}\n')
    return buffer.getvalue()


def _run(**fields: Any) -> RunRecord:
    values: dict[str, Any] = {
        "run_id": "r1",
        "environment_id": "gsm8k",
        "environment_version": "1",
        "model": "Qwen2.5-7B-LoRA",
        "owner": "alice",
        "status": RunStatus.COMPLETED,
        "files": {RunOutput.FINETUNE_ARTIFACT: ARTIFACT_KEY},
    }
    return RunRecord.model_validate(values | fields)


def test_a_runs_dataset_is_saved_once_linked_to_the_run_and_announced() -> None:
    runs, published, events = MemoryRuns(_run()), Published(), Events()
    services = memory_services(
        runs=runs, store=MemoryStore({ARTIFACT_KEY: _artifact()}), publisher=published, events=events
    )

    saved = save_dataset_for_run("r1", owner="alice", services=services)
    with pytest.raises(Conflict) as again:
        save_dataset_for_run("r1", owner="alice", services=services)

    assert (saved.dataset_id, saved.name, saved.train_count) == (
        "ds-r1",
        "GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026",
        160,
    )
    assert str(again.value) == "dataset already saved for this run: ds-r1"
    run = runs.get("r1")
    assert run is not None and (run.dataset_id, run.artifact_status) == ("ds-r1", ArtifactStatus.SAVED)
    assert published == [("DatasetSaved", {"dataset_id": "ds-r1", "run_id": "r1", "name": saved.name})]
    assert events == ["DatasetSaved"]


def test_a_run_without_an_artifact_is_refused_with_the_reason_it_has_none() -> None:
    run = _run(files={}, artifact_reason="the benchmark's scoring program did not emit one")

    with pytest.raises(Conflict) as refused:
        save_dataset_for_run("r1", owner="alice", services=memory_services(runs=MemoryRuns(run)))

    assert str(refused.value) == (
        "the run has no finetune artifact (the benchmark's scoring program did not emit one)"
    )


def test_only_the_owner_saves_a_runsdataset() -> None:
    datasets = MemoryDatasets()
    services = memory_services(
        runs=MemoryRuns(_run()), datasets=datasets, store=MemoryStore({ARTIFACT_KEY: _artifact()})
    )

    with pytest.raises(Forbidden, match="only the run's owner can save its dataset"):
        save_dataset_for_run("r1", owner="bob", services=services)

    assert datasets.records == {}


def test_datasets_are_listed_newest_first_by_kind_and_read_by_id() -> None:
    datasets = MemoryDatasets()
    for record in (
        dataset("r1", "2026-06-01T10:01:00.000000Z"),
        dataset("r2", "2026-06-01T10:03:00.000000Z"),
        dataset("r3", "2026-06-01T10:02:00.000000Z", kind="preference"),
    ):
        datasets.put_if_absent(record)
    services = memory_services(datasets=datasets)

    finetune = list_datasets(services=services, kind="finetune", limit=20, next_token=None)

    assert [item.dataset_id for item in finetune.items] == ["ds-r2", "ds-r1"]
    assert dataset_or_404("ds-r3", services=services).kind == "preference"
    with pytest.raises(NotFound, match="no dataset 'ds-x': check the id"):
        dataset_or_404("ds-x", services=services)
