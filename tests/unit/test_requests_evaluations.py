"""What the evaluation routes do, on the in-memory fakes: the owner grants evaluations, an evaluation needs
the evaluators permission and a succeeded training run, and it is read by who asked and the run's owner."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.ownership import Caller
from benchgen.records.evaluations import EvaluatedModel, EvaluationRecord
from benchgen.records.runs import LiveModel
from benchgen.records.training_runs import StatusChange, TrainingRunRecord, TrainingStatus
from benchgen.requests.errors import ApiError, Conflict, Forbidden, NotFound
from benchgen.requests.evaluations import (
    evaluation_view,
    grant_evaluation,
    list_evaluations,
    report_view,
    request_evaluation,
)
from benchgen.requests.schemas.evaluations import CreateEvaluationRequest
from benchgen.vocabulary import Method, ProviderKind
from tests.api_services import memory_services
from tests.fakes import MemoryEvaluations, MemoryTrainingRuns

OPENAI_COMPATIBLE = ProviderKind("openai-compatible")


def _training_run(status: TrainingStatus = TrainingStatus.SUCCEEDED) -> TrainingRunRecord:
    return TrainingRunRecord(
        training_run_id="train-1",
        owner="alice",
        connection_id="conn-1",
        provider=OPENAI_COMPATIBLE,
        package_id="pkg-1",
        package_sha256="0" * 64,
        package_profile="openai-chat",
        preparation_id="prep-1",
        environment_id="gsm8k",
        environment_version="1",
        method=Method.DEMONSTRATION,
        base_model="example-base",
        base_model_source="package",
        timeline=[StatusChange(status=status)],
        job_name="job-train-1",
        status=status,
    )


def _evaluation(evaluation_id: str, authorized_at: str, **fields: Any) -> EvaluationRecord:
    side = EvaluatedModel(
        live=LiveModel(connection_id="conn-1", provider=OPENAI_COMPATIBLE, model_id="example-base")
    )
    values: dict[str, Any] = {
        "evaluation_id": evaluation_id,
        "owner": "bob",
        "training_run_id": "train-1",
        "training_owner": "alice",
        "package_id": "pkg-1",
        "package_sha256": "0" * 64,
        "environment_id": "gsm8k",
        "environment_version": "1",
        "trained_model": "tuned-model",
        "tuned": side,
        "base": side,
        "authorized_by": "alice",
        "authorized_through": "grant by alice",
        "authorized_at": authorized_at,
    }
    return EvaluationRecord.model_validate(values | fields)


def test_the_owner_grants_an_evaluation_once_and_a_repeat_answers_the_first_grant() -> None:
    evaluations = MemoryEvaluations()
    services = memory_services(training_runs=MemoryTrainingRuns(_training_run()), evaluations=evaluations)

    first = grant_evaluation("train-1", "bob", owner="alice", services=services)
    again = grant_evaluation("train-1", "bob", owner="alice", services=services)

    assert (first.user, first.granted_by) == ("bob", "alice")
    assert again == first


def test_only_the_owner_grants_and_another_users_training_run_is_answered_like_a_missing_one() -> None:
    services = memory_services(training_runs=MemoryTrainingRuns(_training_run()))

    with pytest.raises(NotFound) as refused:
        grant_evaluation("train-1", "carol", owner="bob", services=services)

    assert str(refused.value) == "no training run 'train-1' of yours: only its owner grants its evaluation"


def test_an_owner_granting_themselves_is_told_to_join_the_evaluators_group() -> None:
    services = memory_services(training_runs=MemoryTrainingRuns(_training_run()))

    with pytest.raises(ApiError, match="a grant names another user"):
        grant_evaluation("train-1", "alice", owner="alice", services=services)


def test_a_user_without_the_owners_grant_is_refused_an_evaluation() -> None:
    evaluations = MemoryEvaluations()
    services = memory_services(training_runs=MemoryTrainingRuns(_training_run()), evaluations=evaluations)

    with pytest.raises(Forbidden, match="evaluating training run train-1 needs its owner's grant"):
        request_evaluation(
            "train-1",
            CreateEvaluationRequest(),
            caller=Caller(user="bob", groups=frozenset()),
            services=services,
        )

    assert evaluations.records == {}


def test_a_granted_user_asking_before_the_training_succeeded_is_told_its_status() -> None:
    services = memory_services(training_runs=MemoryTrainingRuns(_training_run(TrainingStatus.RUNNING)))
    grant_evaluation("train-1", "bob", owner="alice", services=services)

    with pytest.raises(Conflict, match="training run train-1 is Running, not Succeeded"):
        request_evaluation(
            "train-1",
            CreateEvaluationRequest(),
            caller=Caller(user="bob", groups=frozenset()),
            services=services,
        )


def test_the_owner_lists_the_evaluations_newest_first_and_a_stranger_is_answered_not_found() -> None:
    evaluations = MemoryEvaluations(
        _evaluation("eval-1", "2026-01-01T00:00:00Z"), _evaluation("eval-2", "2026-01-02T00:00:00Z")
    )
    services = memory_services(training_runs=MemoryTrainingRuns(_training_run()), evaluations=evaluations)

    listed = list_evaluations("train-1", owner="alice", services=services, limit=20, next_token=None)

    assert [item.evaluation_id for item in listed.items] == ["eval-2", "eval-1"]
    with pytest.raises(NotFound):
        list_evaluations("train-1", owner="carol", services=services, limit=20, next_token=None)


def test_an_evaluation_is_read_by_who_asked_and_the_runs_owner_only() -> None:
    services = memory_services(evaluations=MemoryEvaluations(_evaluation("eval-1", "2026-01-01T00:00:00Z")))

    assert evaluation_view("eval-1", user="bob", services=services).tuned.model_id == "example-base"
    assert evaluation_view("eval-1", user="alice", services=services).evaluation_id == "eval-1"
    with pytest.raises(NotFound, match="no evaluation 'eval-1' of yours: check the id"):
        evaluation_view("eval-1", user="carol", services=services)


def test_a_running_evaluation_has_no_report_yet() -> None:
    services = memory_services(evaluations=MemoryEvaluations(_evaluation("eval-1", "2026-01-01T00:00:00Z")))

    with pytest.raises(Conflict) as refused:
        report_view("eval-1", user="bob", services=services)

    assert str(refused.value) == (
        "evaluation eval-1 is Running and has no report: read it again once it is Completed"
    )
