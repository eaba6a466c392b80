"""Who may evaluate a training run: the owner in the evaluators group, or a user the owner granted; every
refusal says which permission is missing and how to get it."""

from __future__ import annotations

import pytest

from benchgen.evaluation.permission import (
    NotEvaluable,
    NotPermitted,
    SelfGrant,
    authorize,
    new_grant,
)
from benchgen.ownership import Caller
from benchgen.records.evaluations import EvaluationGrant
from benchgen.records.training_runs import TrainingRunRecord, TrainingStatus
from tests.training_material import training_run

GROUP = "evaluators"


def _training(status: TrainingStatus = TrainingStatus.SUCCEEDED) -> TrainingRunRecord:
    return training_run(
        training_run_id="train-0123456789abcdef01234567",
        environment_id="gsm8k-en",
        base_model="example-base",
        status=status,
        job_name="train-0123456789abcdef01234567",
        result_model="example-tuned",
    )


def _grant(user: str = "bob", run_id: str = "train-0123456789abcdef01234567") -> EvaluationGrant:
    return EvaluationGrant(
        training_run_id=run_id, user=user, granted_by="alice", created_at="2026-12-01T10:00Z"
    )


def test_the_owner_in_the_evaluators_group_is_authorized_through_the_group() -> None:
    authorization = authorize(_training(), Caller("alice", frozenset({GROUP})), group=GROUP, grant=None)
    assert (authorization.by, authorization.through) == ("alice", "group evaluators")


def test_a_user_the_owner_granted_is_authorized_by_the_owner_when_the_grant_was_recorded() -> None:
    authorization = authorize(_training(), Caller("bob"), group=GROUP, grant=_grant())
    assert (authorization.by, authorization.through, authorization.at) == (
        "alice",
        "grant by alice",
        "2026-12-01T10:00Z",
    )


def test_a_user_who_is_not_the_owner_and_holds_no_grant_is_told_to_ask_the_owner_for_one() -> None:
    with pytest.raises(NotPermitted) as refused:
        authorize(_training(), Caller("bob", frozenset({GROUP})), group=GROUP, grant=None)
    assert str(refused.value) == (
        "evaluating training run train-0123456789abcdef01234567 needs its owner's grant: you do not own it "
        "and its owner has granted you no evaluation; ask the owner to call "
        "POST /training-runs/train-0123456789abcdef01234567/evaluation-grants with your user id"
    )


def test_a_grant_for_another_user_or_another_run_does_not_authorize() -> None:
    for grant in (_grant(user="carol"), _grant(run_id="train-other")):
        with pytest.raises(NotPermitted, match="needs its owner's grant"):
            authorize(_training(), Caller("bob"), group=GROUP, grant=grant)


def test_the_owner_outside_the_evaluators_group_is_told_to_join_it() -> None:
    with pytest.raises(NotPermitted) as refused:
        authorize(_training(), Caller("alice", frozenset({"trainers"})), group=GROUP, grant=None)
    assert str(refused.value) == (
        "evaluating training run train-0123456789abcdef01234567 needs the evaluators permission: you own it "
        "but are not in the Cognito group 'evaluators'; ask an administrator to add you to that group"
    )


@pytest.mark.parametrize("status", [TrainingStatus.QUEUED, TrainingStatus.RUNNING, TrainingStatus.FAILED])
def test_a_training_run_that_has_not_succeeded_is_refused_naming_its_status(status: TrainingStatus) -> None:
    with pytest.raises(NotEvaluable) as refused:
        authorize(_training(status), Caller("alice", frozenset({GROUP})), group=GROUP, grant=None)
    assert str(refused.value).startswith(
        f"training run train-0123456789abcdef01234567 is {status.value}, not Succeeded"
    )


def test_permission_is_checked_before_the_status_so_an_outsider_learns_nothing_of_the_run() -> None:
    with pytest.raises(NotPermitted):
        authorize(_training(TrainingStatus.RUNNING), Caller("mallory"), group=GROUP, grant=None)


def test_an_owner_cannot_grant_the_evaluation_to_themselves() -> None:
    with pytest.raises(SelfGrant, match="you evaluate it through the evaluators group"):
        new_grant(_training(), owner="alice", user="alice")
    grant = new_grant(_training(), owner="alice", user="bob")
    assert (grant.user, grant.granted_by) == ("bob", "alice")
