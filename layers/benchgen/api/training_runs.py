"""``/training-runs``: launch a provider training job over a package, follow it, cancel it.

A training run is launched deliberately (never as a side effect of a package or dataset), for its owner
only: another user's training run, package or connection is answered 404 alike, so ids reveal nothing.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field

from benchgen.api import ApiServices, Owner, Services
from benchgen.api.errors import Conflict, NotFound, responses
from benchgen.api.idempotency import once_per_key
from benchgen.api.schemas import (
    ID_PATTERN,
    HyperparameterName,
    HyperparameterValue,
    NextToken,
    ResourceId,
    TrainingRunIdempotencyKey,
)
from benchgen.aws.executions import ExecutionStarter
from benchgen.finetune.split import Split
from benchgen.providers.checks import check_request
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import job_name_for
from benchgen.providers.registry import provider
from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.records.preparations import PreparationRecord
from benchgen.records.training_runs import TRAINING_TERMINAL, StatusChange, TrainingRunRecord, TrainingStatus
from benchgen.steps.keys import training_execution_name
from benchgen.training.package import SPLIT_FILES

logger = Logger(child=True)
router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated

#: What a launch without a base model says: the package's recorded base model is the one trained.
PACKAGE_BASE_MODEL_NOTICE = (
    "Benchmark fine-tune dataset selected: training will reuse the saved BenchGen artifact and its "
    "recorded base model."
)
NOT_STARTED = "the training pipeline could not be started: launch the training run again"


class CreateTrainingRunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    package_id: str = Field(pattern=ID_PATTERN, description="a Ready package of yours")
    connection_id: str = Field(pattern=ID_PATTERN, description="the provider connection to train on")
    base_model: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="overrides the base model recorded with the package's preparation (with a warning)",
    )
    hyperparameters: dict[HyperparameterName, HyperparameterValue] = Field(
        default_factory=dict,
        max_length=20,
        description="the provider's own names and values (numbers within ±1e12, text up to 64 characters), "
        "checked against the provider's own ranges; the package's suggestions are never applied",
        json_schema_extra={"additionalProperties": False},
    )


class LaunchedTrainingRun(BaseModel):
    training_run: TrainingRunRecord
    notices: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class TrainingRunList(BaseModel):
    items: list[TrainingRunRecord]
    next_token: str | None = None


# ---- services --------------------------------------------------------------------------------------------


def new_training_run_id() -> str:
    return f"train-{secrets.token_hex(12)}"


def _package(package_id: str, *, owner: str, services: ApiServices) -> PackageRecord:
    package = services.packages.get(package_id)
    if package is None or package.owner != owner:
        raise NotFound(f"no package {package_id!r} of yours: check the id (GET /packages/{{id}})")
    if package.status is not PackageStatus.READY:
        raise Conflict(
            f"package {package_id} is {package.status.value}, not Ready: train on a Ready package"
            + (f" ({package.reason})" if package.reason else "")
        )
    return package


def _connection(connection_id: str, *, owner: str, services: ApiServices) -> ConnectionRecord:
    connection = services.connections.get(connection_id)
    if connection is None or connection.owner != owner:
        raise NotFound(f"no connection {connection_id!r} of yours: GET /connections lists yours")
    return connection


def _preparation(package: PackageRecord, services: ApiServices) -> PreparationRecord:
    preparation = services.preparations.get(package.preparation_id)
    if preparation is None:
        raise Conflict(
            f"package {package.package_id} names preparation {package.preparation_id}, which is gone: "
            "prepare and package the dataset again"
        )
    return preparation


def launch_messages(requested: str | None, recorded: str) -> tuple[list[str], list[str]]:
    """The notices and warnings a launch answers with: which base model is trained, and why."""
    if requested is None:
        return [PACKAGE_BASE_MODEL_NOTICE], []
    if requested != recorded:
        return [], [
            f"base model {requested} overrides {recorded}, the base model recorded with the package's "
            "preparation: the trained model is compared against the one you name"
        ]
    return [], []


def new_training_run(
    request: CreateTrainingRunRequest, *, owner: str, services: ApiServices
) -> TrainingRunRecord:
    """Check the request against the connection's profile and the provider's hyperparameters, record the
    training run Queued, and start its TrainingPipeline."""
    package = _package(request.package_id, owner=owner, services=services)
    connection = _connection(request.connection_id, owner=owner, services=services)
    preparation = _preparation(package, services)
    base_model = request.base_model or preparation.base_model
    train = package.files.get(SPLIT_FILES[Split.TRAIN])
    check_request(
        connection,
        method=preparation.method,
        export_profile=package.profile,
        base_model=base_model,
        rows=train.rows if train is not None else None,
    )
    hyperparameters = provider(connection.provider).check_hyperparameters(base_model, request.hyperparameters)
    if package.sha256 is None:
        raise Conflict(f"package {package.package_id} records no sha256: request the package again")
    training_run_id = new_training_run_id()
    record = TrainingRunRecord(
        training_run_id=training_run_id,
        owner=owner,
        connection_id=connection.connection_id,
        provider=connection.provider,
        package_id=package.package_id,
        package_sha256=package.sha256,
        package_profile=package.profile,
        preparation_id=preparation.preparation_id,
        environment_id=preparation.environment_id,
        environment_version=preparation.environment_version,
        method=preparation.method,
        base_model=base_model,
        base_model_source="package" if base_model == preparation.base_model else "request",
        hyperparameters=hyperparameters,
        suggested_hyperparams=dict(preparation.suggested_hyperparams),
        timeline=[StatusChange(status=TrainingStatus.QUEUED)],
        job_name=job_name_for(training_run_id),
    )
    if not services.training_runs.put_if_absent(record):
        raise Conflict("a training run id collided: launch the training run again")
    _start(record, services)
    services.record_event("TrainingRunLaunched")
    return record


def _start(record: TrainingRunRecord, services: ApiServices) -> None:
    """Start the run's execution, named by its id; a run that cannot start is failed, not left Queued."""
    arn = services.settings.training_state_machine_arn
    try:
        if not arn:
            raise RuntimeError("TRAINING_STATE_MACHINE_ARN is not set: only the API function starts training")
        ExecutionStarter(arn).start_once(
            training_execution_name(record.training_run_id), {"training_run_id": record.training_run_id}
        )
    except Exception:
        logger.exception("could not start training", extra={"training_run_id": record.training_run_id})
        services.training_runs.transition(
            record.training_run_id, TrainingStatus.FAILED, message=NOT_STARTED, failure_reason=NOT_STARTED
        )
        raise


def new_training_run_once(
    request: CreateTrainingRunRequest,
    *,
    owner: str,
    idempotency_key: str,
    services: ApiServices,
    context: LambdaContext | None = None,
) -> TrainingRunRecord:
    """:func:`new_training_run` once per (caller, Idempotency-Key): a retry gets the same training run,
    and so the same provider job."""

    def create(*, attempt: dict[str, Any]) -> dict[str, str]:
        return {"training_run_id": new_training_run(request, owner=owner, services=services).training_run_id}

    created = once_per_key(
        create,
        caller=owner,
        key=idempotency_key,
        body=request.model_dump(mode="json"),
        persistence=services.idempotency,
        noun="training run",
        context=context,
    )
    return training_run_of_owner(created["training_run_id"], owner=owner, services=services)


def training_run_of_owner(training_run_id: str, *, owner: str, services: ApiServices) -> TrainingRunRecord:
    """The owner's training run; 404 alike when there is none or it is someone else's."""
    record = services.training_runs.get(training_run_id)
    if record is None or record.owner != owner:
        raise NotFound(f"no training run {training_run_id!r} of yours: GET /training-runs lists yours")
    return record


def cancel_training_run(training_run_id: str, *, owner: str, services: ApiServices) -> TrainingRunRecord:
    """Ask the pipeline to stop the provider job; its next poll stops it and records Cancelled."""
    record = training_run_of_owner(training_run_id, owner=owner, services=services)
    if record.status in TRAINING_TERMINAL:
        raise Conflict(f"training run {training_run_id} is already {record.status.value}: nothing to cancel")
    if not services.training_runs.request_cancel(training_run_id, owner=owner):
        current = training_run_of_owner(training_run_id, owner=owner, services=services)
        raise Conflict(f"training run {training_run_id} is already {current.status.value}: nothing to cancel")
    services.record_event("TrainingRunCancelRequested")
    return training_run_of_owner(training_run_id, owner=owner, services=services)


# ---- routes ----------------------------------------------------------------------------------------------


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
    if idempotency_key is None:
        record = new_training_run(body, owner=owner, services=services)
    else:
        record = new_training_run_once(
            body,
            owner=owner,
            idempotency_key=idempotency_key,
            services=services,
            context=router.lambda_context,
        )
    preparation = services.preparations.get(record.preparation_id)
    recorded = preparation.base_model if preparation is not None else record.base_model
    notices, warnings = launch_messages(body.base_model, recorded)
    return LaunchedTrainingRun(training_run=record, notices=notices, warnings=warnings)


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
    page = services.training_runs.list(
        owner=owner, preparation_id=preparation_id, limit=limit, next_token=next_token
    )
    return TrainingRunList(items=page.items, next_token=page.next_token)


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
