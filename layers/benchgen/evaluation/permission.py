"""Who may evaluate a training run, and the sentence a refused caller reads.

Evaluating a trained model is its own action with its own permission: a caller may evaluate a Succeeded
training run when the caller owns it and is in the evaluators group, or when its owner recorded a grant
naming the caller. An owner outside the group gets in through the group, not through a grant to
themselves: otherwise every owner could authorize themselves and the group would mean nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchgen.errors import BenchGenError
from benchgen.ownership import Caller
from benchgen.records.evaluations import EvaluationGrant
from benchgen.records.timestamps import utc_now
from benchgen.records.training_runs import TrainingRunRecord, TrainingStatus


class NotPermitted(BenchGenError):
    """The caller lacks the permission to evaluate this training run; the message says how to get it."""


class NotEvaluable(BenchGenError):
    """The training run is not Succeeded, so there is no trained model to evaluate yet."""


class SelfGrant(BenchGenError):
    """An owner tried to grant the evaluation of their own training run to themselves."""


@dataclass(frozen=True)
class Authorization:
    """Who authorized an evaluation, through what, and when."""

    by: str
    through: str
    at: str


def grant_route(training_run_id: str) -> str:
    return f"POST /training-runs/{training_run_id}/evaluation-grants"


def authorize(
    training_run: TrainingRunRecord, caller: Caller, *, group: str, grant: EvaluationGrant | None
) -> Authorization:
    """The caller's authorization to evaluate ``training_run``, or NotPermitted / NotEvaluable.

    Permission is checked first, so a caller without it learns nothing of the run's progress.
    """
    run_id = training_run.training_run_id
    if caller.user == training_run.owner:
        if group not in caller.groups:
            raise NotPermitted(
                f"evaluating training run {run_id} needs the evaluators permission: you own it but are not "
                f"in the Cognito group {group!r}; ask an administrator to add you to that group"
            )
        authorization = Authorization(by=caller.user, through=f"group {group}", at=utc_now())
    elif grant is not None and grant.user == caller.user and grant.training_run_id == run_id:
        # The owner authorized it when recording the grant.
        authorization = Authorization(
            by=grant.granted_by, through=f"grant by {grant.granted_by}", at=grant.created_at
        )
    else:
        raise NotPermitted(
            f"evaluating training run {run_id} needs its owner's grant: you do not own it and its owner "
            f"has granted you no evaluation; ask the owner to call {grant_route(run_id)} with your "
            "user id"
        )
    if training_run.status is not TrainingStatus.SUCCEEDED:
        raise NotEvaluable(
            f"training run {run_id} is {training_run.status.value}, not Succeeded: only a trained model "
            f"can be evaluated; wait until it succeeds (GET /training-runs/{run_id})"
        )
    return authorization


def new_grant(training_run: TrainingRunRecord, *, owner: str, user: str) -> EvaluationGrant:
    """The grant an owner records for ``user``; refused when the owner names themselves."""
    if user == owner:
        raise SelfGrant(
            "a grant names another user: you own this training run, so you evaluate it through the "
            "evaluators group; ask an administrator to add you to it"
        )
    return EvaluationGrant(training_run_id=training_run.training_run_id, user=user, granted_by=owner)
