"""The training runs table on moto: one item per id, the owner's list newest first, a timeline that
grows by conditional transitions and never leaves a terminal status."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.aws.tables.training_runs import TrainingRunsRepo
from benchgen.records.bounds import MAX_TEXT_CHARS
from benchgen.records.training_runs import TrainingRunRecord, TrainingStatus
from benchgen.settings import Settings


def _training_run(
    training_run_id: str, minute: int, *, owner: str = "trainer-a", **changes: Any
) -> TrainingRunRecord:
    fields: dict[str, Any] = {
        "training_run_id": training_run_id,
        "owner": owner,
        "connection_id": "conn-1",
        "provider": "bedrock",
        "package_id": "pkg-1",
        "package_sha256": "a" * 64,
        "package_profile": "bedrock-conversation",
        "preparation_id": "prep-1",
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": "demonstration",
        "base_model": "amazon.nova-micro-v1:0:128k",
        "base_model_source": "package",
        "hyperparameters": {"epochCount": "2"},
        "suggested_hyperparams": {"epochs": 3},
        "timeline": [{"status": "Queued", "at": f"2026-06-01T10:{minute:02d}:00.000000Z"}],
        "job_name": f"benchgen-{training_run_id}",
        "created_at": f"2026-06-01T10:{minute:02d}:00.000000Z",
    }
    return TrainingRunRecord.model_validate({**fields, **changes})


@pytest.fixture
def training_runs(aws: Settings) -> TrainingRunsRepo:
    return TrainingRunsRepo(aws.training_runs_table)


def test_storing_a_training_run_twice_keeps_the_first(training_runs: TrainingRunsRepo) -> None:
    assert training_runs.put_if_absent(_training_run("t1", 1))
    assert training_runs.put_if_absent(_training_run("t1", 2, base_model="other")) is False
    stored = training_runs.get("t1")
    assert stored is not None
    assert stored.base_model == "amazon.nova-micro-v1:0:128k"
    assert stored.hyperparameters == {"epochCount": "2"}
    assert stored.suggested_hyperparams == {"epochs": 3}
    assert training_runs.get("missing") is None


def test_the_owners_list_is_newest_first_in_pages_and_holds_no_one_elses(
    training_runs: TrainingRunsRepo,
) -> None:
    for minute, training_run_id in enumerate(["t1", "t2", "t3"]):
        training_runs.put_if_absent(_training_run(training_run_id, minute))
    training_runs.put_if_absent(_training_run("theirs", 9, owner="trainer-b"))
    first = training_runs.list(owner="trainer-a", limit=2)
    last = training_runs.list(owner="trainer-a", limit=2, next_token=first.next_token)
    assert [[t.training_run_id for t in page.items] for page in (first, last)] == [["t3", "t2"], ["t1"]]
    assert last.next_token is None
    assert [t.training_run_id for t in training_runs.list(owner="trainer-b").items] == ["theirs"]


def test_a_transition_appends_what_the_provider_said_to_the_timeline(training_runs: TrainingRunsRepo) -> None:
    training_runs.put_if_absent(_training_run("t1", 1))
    assert training_runs.record_job("t1", job_id="arn:job")
    assert training_runs.transition("t1", TrainingStatus.RUNNING, provider_status="InProgress")
    # a second poll that sees the same status changes nothing
    assert training_runs.transition("t1", TrainingStatus.RUNNING, provider_status="InProgress") is False
    assert training_runs.transition(
        "t1",
        TrainingStatus.SUCCEEDED,
        provider_status="Completed",
        result_model="arn:aws:bedrock:us-east-1:123456789012:custom-model/x",
    )
    assert training_runs.record_cost("t1", {"billable_seconds": 120})
    stored = training_runs.get("t1")
    assert stored is not None
    assert stored.status is TrainingStatus.SUCCEEDED
    assert [(c.status, c.provider_status) for c in stored.timeline] == [
        (TrainingStatus.QUEUED, None),
        (TrainingStatus.RUNNING, "InProgress"),
        (TrainingStatus.SUCCEEDED, "Completed"),
    ]
    assert stored.job_id == "arn:job"
    assert stored.result_model == "arn:aws:bedrock:us-east-1:123456789012:custom-model/x"
    assert stored.cost == {"billable_seconds": 120}
    assert stored.finished_at == stored.timeline[-1].at


@pytest.mark.parametrize("final", [TrainingStatus.SUCCEEDED, TrainingStatus.FAILED, TrainingStatus.CANCELLED])
def test_a_terminal_status_is_never_left(training_runs: TrainingRunsRepo, final: TrainingStatus) -> None:
    training_runs.put_if_absent(_training_run("t1", 1))
    assert training_runs.transition("t1", final, message="the first word")
    for later in TrainingStatus:
        assert training_runs.transition("t1", later, message="a late step") is False
    assert training_runs.request_cancel("t1", owner="trainer-a") is False
    stored = training_runs.get("t1")
    assert stored is not None and stored.status is final
    assert [c.message for c in stored.timeline] == [None, "the first word"]
    assert stored.cancel_requested is False


def test_a_missing_run_is_not_created_by_a_transition(training_runs: TrainingRunsRepo) -> None:
    assert training_runs.transition("ghost", TrainingStatus.RUNNING) is False
    assert training_runs.record_job("ghost", job_id="arn:job") is False
    assert training_runs.get("ghost") is None


def test_a_failure_reason_is_kept_within_the_records_bounds(training_runs: TrainingRunsRepo) -> None:
    training_runs.put_if_absent(_training_run("t1", 1))
    long_message = "x" * (MAX_TEXT_CHARS * 3)
    assert training_runs.transition(
        "t1", TrainingStatus.FAILED, message=long_message, failure_reason=long_message
    )
    stored = training_runs.get("t1")
    assert stored is not None and stored.failure_reason is not None
    assert len(stored.failure_reason) == MAX_TEXT_CHARS
    assert "more characters cut" in stored.failure_reason
    assert stored.timeline[-1].message == stored.failure_reason


def test_a_job_id_once_recorded_is_never_replaced(training_runs: TrainingRunsRepo) -> None:
    training_runs.put_if_absent(_training_run("t1", 1))
    assert training_runs.record_job("t1", job_id="arn:first")
    assert training_runs.record_job("t1", job_id="arn:first")
    assert training_runs.record_job("t1", job_id="arn:second") is False
    stored = training_runs.get("t1")
    assert stored is not None and stored.job_id == "arn:first"


def test_only_the_owner_can_ask_to_cancel(training_runs: TrainingRunsRepo) -> None:
    training_runs.put_if_absent(_training_run("t1", 1))
    assert training_runs.request_cancel("t1", owner="trainer-b") is False
    assert training_runs.get("t1").cancel_requested is False  # type: ignore[union-attr]
    assert training_runs.request_cancel("t1", owner="trainer-a")
    assert training_runs.get("t1").cancel_requested is True  # type: ignore[union-attr]


def test_the_cost_the_provider_reports_is_recorded(training_runs: TrainingRunsRepo) -> None:
    training_runs.put_if_absent(_training_run("t1", 1))
    assert training_runs.record_cost("t1", {"billable_seconds": 42, "currency": "USD"})
    stored = training_runs.get("t1")
    assert stored is not None and stored.cost == {"billable_seconds": 42, "currency": "USD"}
