"""The fakes keep the conditions of the tables they stand for."""

from __future__ import annotations

import time

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemAlreadyExistsError
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.records.training_runs import TrainingRunRecord, TrainingStatus
from tests.fakes import MemoryIdempotency, MemoryPackages, MemoryTrainingRuns
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


def test_a_cancel_is_asked_only_by_the_owner_of_a_run_that_has_not_ended() -> None:
    runs = MemoryTrainingRuns(_training(TrainingStatus.RUNNING))

    by_stranger = runs.request_cancel("train-1", owner="mallory")
    by_owner = runs.request_cancel("train-1", owner="alice")
    runs.transition("train-1", TrainingStatus.CANCELLED)
    after_end = MemoryTrainingRuns(_training(TrainingStatus.SUCCEEDED)).request_cancel(
        "train-1", owner="alice"
    )

    record = runs.get("train-1")
    assert (by_stranger, by_owner, after_end) == (False, True, False)
    assert record is not None and record.cancel_requested


def test_a_failed_package_is_retried_only_from_the_attempt_named() -> None:
    packages = MemoryPackages(
        PackageRecord(
            package_id="pkg-1",
            preparation_id="prep-1",
            owner="alice",
            profile="openai-chat",
            status=PackageStatus.FAILED,
            state_hash="state",
            package_key="packages/pkg-1.zip",
            reason="out of time",
        )
    )

    stale = packages.retry("pkg-1", attempt=2)
    retried = packages.retry("pkg-1", attempt=1)
    again = packages.retry("pkg-1", attempt=1)

    record = packages.get("pkg-1")
    assert (stale, retried, again) == (False, True, False)
    assert record is not None and (record.status, record.attempt, record.reason) == (
        PackageStatus.BUILDING,
        2,
        None,
    )


def test_an_idempotency_record_standing_refuses_a_second_put_until_it_expires() -> None:
    persistence = MemoryIdempotency()
    standing = DataRecord(idempotency_key="k", status="COMPLETED", expiry_timestamp=int(time.time()) + 60)
    expired = DataRecord(idempotency_key="old", status="COMPLETED", expiry_timestamp=int(time.time()) - 1)
    persistence.records = {"k": standing, "old": expired}
    replacement = DataRecord(
        idempotency_key="old", status="INPROGRESS", expiry_timestamp=int(time.time()) + 60
    )

    with pytest.raises(IdempotencyItemAlreadyExistsError):
        persistence._put_record(DataRecord(idempotency_key="k", status="INPROGRESS"))
    persistence._put_record(replacement)

    assert persistence.records == {"k": standing, "old": replacement}
