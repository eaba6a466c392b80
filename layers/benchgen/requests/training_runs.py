"""What ``/training-runs`` does: launch a provider training job over a package, follow it, cancel it.

A training run is launched deliberately (never as a side effect of a package or dataset), for its owner
only: another user's training run, package or connection is answered 404 alike, so ids reveal nothing.
"""

from __future__ import annotations

import secrets

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.bucket_layout import training_execution_name
from benchgen.finetune.split import Split
from benchgen.providers.checks import check_request
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import job_name_for
from benchgen.providers.registry import provider
from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.records.preparations import PreparationRecord
from benchgen.records.training_runs import TRAINING_TERMINAL, StatusChange, TrainingRunRecord, TrainingStatus
from benchgen.requests.errors import Conflict, NotFound
from benchgen.requests.idempotency import create_once
from benchgen.requests.schemas.training_runs import (
    CreateTrainingRunRequest,
    LaunchedTrainingRun,
    TrainingRunList,
)
from benchgen.requests.services import ApiServices
from benchgen.training.package import SPLIT_FILES

logger = Logger(child=True)

NOT_STARTED = "the training pipeline could not be started: launch the training run again"


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


def launch_messages(
    requested: str | None, recorded: str, run: TrainingRunRecord
) -> tuple[list[str], list[str]]:
    """The notices and warnings a launch answers with: what is trained on which base model, and why."""
    if requested is None:
        return [
            f"package {run.package_id} ({run.package_profile}, prepared from {run.environment_id} "
            f"{run.environment_version} in preparation {run.preparation_id}) trains {recorded}, the base "
            "model recorded with its preparation: the launch named none"
        ], []
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
    try:
        starter = services.training_starter
        if starter is None:
            raise RuntimeError("TRAINING_STATE_MACHINE_ARN is not set: only the API function starts training")
        starter.start_once(
            training_execution_name(record.training_run_id), {"training_run_id": record.training_run_id}
        )
    except Exception:
        logger.exception("could not start training", extra={"training_run_id": record.training_run_id})
        services.training_runs.transition(
            record.training_run_id, TrainingStatus.FAILED, message=NOT_STARTED, failure_reason=NOT_STARTED
        )
        raise


def launch_training_run(
    request: CreateTrainingRunRequest,
    *,
    owner: str,
    services: ApiServices,
    idempotency_key: str | None = None,
    context: LambdaContext | None = None,
) -> LaunchedTrainingRun:
    """A new training run, with the notices and warnings of its base model; with an Idempotency-Key, a
    retry gets the same training run, and so the same provider job."""
    record = create_once(
        lambda: new_training_run(request, owner=owner, services=services),
        id_of=lambda created: created.training_run_id,
        read=lambda training_run_id: training_run_of_owner(training_run_id, owner=owner, services=services),
        noun="training run",
        caller=owner,
        key=idempotency_key,
        body=request.model_dump(mode="json"),
        persistence=services.idempotency,
        context=context,
    )
    preparation = services.preparations.get(record.preparation_id)
    recorded = preparation.base_model if preparation is not None else record.base_model
    notices, warnings = launch_messages(request.base_model, recorded, record)
    return LaunchedTrainingRun(training_run=record, notices=notices, warnings=warnings)


def list_training_runs(
    *, owner: str, services: ApiServices, preparation_id: str | None, limit: int, next_token: str | None
) -> TrainingRunList:
    page = services.training_runs.list(
        owner=owner, preparation_id=preparation_id, limit=limit, next_token=next_token
    )
    return TrainingRunList(items=page.items, next_token=page.next_token)


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
