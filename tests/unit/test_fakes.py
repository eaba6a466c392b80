"""The fakes keep the conditions of the tables they stand for."""

from __future__ import annotations

from benchgen.records.training_runs import TrainingRunRecord, TrainingStatus
from tests.fakes import MemoryTrainingRuns
from tests.training_material import training_run


def _training(status: TrainingStatus) -> TrainingRunRecord:
    return training_run(status=status)


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
