"""The fakes keep the conditions of the tables they stand for."""

from __future__ import annotations

from benchgen.records.training_runs import TrainingRunRecord, TrainingStatus
from benchgen.vocabulary import Method
from tests.fakes import MemoryTrainingRuns


def _training(status: TrainingStatus) -> TrainingRunRecord:
    return TrainingRunRecord(
        training_run_id="train-1",
        owner="alice",
        connection_id="conn-1",
        provider="openai-compatible",
        package_id="pkg-1",
        package_sha256="ab" * 32,
        package_profile="openai-chat",
        preparation_id="prep-1",
        environment_id="gsm8k",
        environment_version="v1",
        method=Method.DEMONSTRATION,
        base_model="base-7b",
        base_model_source="package",
        status=status,
        job_name="train-1",
    )


def test_a_training_run_reaches_each_status_once_and_never_leaves_an_end() -> None:
    runs = MemoryTrainingRuns(_training(TrainingStatus.QUEUED))

    moved = runs.transition("train-1", TrainingStatus.SUCCEEDED, result_model="tuned-7b")
    again = runs.transition("train-1", TrainingStatus.FAILED, failure_reason="late")

    record = runs.get("train-1")
    assert (moved, again) == (True, False)
    assert record is not None and (record.status, record.result_model) == (
        TrainingStatus.SUCCEEDED,
        "tuned-7b",
    )
    assert [change.status for change in record.timeline] == [TrainingStatus.SUCCEEDED]
    assert record.finished_at == record.timeline[0].at
