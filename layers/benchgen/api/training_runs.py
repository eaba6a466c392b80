"""``/training-runs``: launch a provider training job over a package, follow it, cancel it.

A training run is launched deliberately (never as a side effect of a package or dataset), for its owner
only: another user's training run, package or connection is answered 404 alike, so ids reveal nothing.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import Owner, Services
from benchgen.api.errors import responses
from benchgen.api.parameters import NextToken, ResourceId, TrainingRunIdempotencyKey
from benchgen.records.training_runs import TrainingRunRecord
from benchgen.requests.schemas.common import ID_PATTERN
from benchgen.requests.schemas.training_runs import (
    CreateTrainingRunRequest,
    LaunchedTrainingRun,
    TrainingRunList,
)
from benchgen.requests.training_runs import (
    cancel_training_run,
    launch_training_run,
    list_training_runs,
    training_run_of_owner,
)

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.post(
    "/training-runs",
    status_code=202,
    tags=["training runs"],
    summary="Launch a training run of a Ready package on a provider connection",
    description="202 with the training run Queued; its TrainingPipeline uploads the package's train and "
    "validation files, starts the provider job and follows it. Without base_model the package's recorded "
    "base model is trained (a notice says so); a different base_model is used with a warning.",
    responses=responses(202, 400, 404, 409, body=True),
)
def post_training_run(
    body: CreateTrainingRunRequest,
    owner: Owner,
    services: Services,
    idempotency_key: TrainingRunIdempotencyKey = None,
) -> LaunchedTrainingRun:
    return launch_training_run(
        body, owner=owner, services=services, idempotency_key=idempotency_key, context=router.lambda_context
    )


@router.get(
    "/training-runs",
    tags=["training runs"],
    summary="List your training runs, newest first",
    description="With preparation_id, only those that trained a package of that preparation.",
    responses=responses(200, 400),
)
def get_training_runs(
    owner: Owner,
    services: Services,
    preparation_id: Annotated[
        str | None, Query(pattern=ID_PATTERN, description="only training runs of this preparation's packages")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="training runs per page")] = 20,
    next_token: NextToken = None,
) -> TrainingRunList:
    return list_training_runs(
        owner=owner, services=services, preparation_id=preparation_id, limit=limit, next_token=next_token
    )


@router.get(
    "/training-runs/<training_run_id>",
    tags=["training runs"],
    summary="Read a training run: its status timeline, configuration beside the suggestions, job and model",
    responses=responses(200, 404),
)
def get_training_run(training_run_id: ResourceId, owner: Owner, services: Services) -> TrainingRunRecord:
    return training_run_of_owner(training_run_id, owner=owner, services=services)


@router.post(
    "/training-runs/<training_run_id>/cancel",
    status_code=202,
    tags=["training runs"],
    summary="Cancel a training run: the pipeline stops the provider job and records Cancelled",
    responses=responses(202, 404, 409),
)
def post_cancel(training_run_id: ResourceId, owner: Owner, services: Services) -> TrainingRunRecord:
    return cancel_training_run(training_run_id, owner=owner, services=services)
