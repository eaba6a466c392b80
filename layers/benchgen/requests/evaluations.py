"""What ``/training-runs/{id}/evaluation-grants``, ``/training-runs/{id}/evaluations`` and
``/evaluations/{id}`` do: authorize, request and read the evaluation of a trained model against its
base on held-out cases.

Which models and runs an evaluation compares is settled here, where a bad request can still be answered
with a 4xx; the EvaluationPipeline then creates the runs this chose, waits for them and compares them.
"""

from __future__ import annotations

import secrets
import tempfile
from contextlib import closing
from pathlib import Path

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.evaluation.permission import (
    NotEvaluable,
    NotPermitted,
    SelfGrant,
    authorize,
    new_grant,
)
from benchgen.evaluation.report import EvaluationReport
from benchgen.ownership import Caller
from benchgen.providers.registry import provider
from benchgen.records.evaluations import EvaluatedModel, EvaluationGrant, EvaluationRecord, EvaluationStatus
from benchgen.records.runs import LiveModel
from benchgen.records.timestamps import utc_now
from benchgen.records.training_runs import TrainingRunRecord
from benchgen.requests.errors import ApiError, Conflict, Forbidden, NotFound
from benchgen.requests.idempotency import create_once
from benchgen.requests.live_runs import live_model_for
from benchgen.requests.schemas.evaluations import (
    CreateEvaluationRequest,
    EvaluationList,
    EvaluationView,
    ModelChoice,
    ReportView,
)
from benchgen.requests.schemas.runs import ModelConfigRequest
from benchgen.requests.services import ApiServices
from benchgen.requests.training_runs import training_run_of_owner
from benchgen.steps.base_run import BaseRunProblem, covers_held_out, reusable_base_run
from benchgen.steps.evaluation import EvaluationError, held_out_package
from benchgen.vocabulary import InferenceMode, Sampling

logger = Logger(child=True)

# Both runs answer at temperature 0, so the comparison measures the models, not the sampling.
EVALUATION_SAMPLING = Sampling.model_construct(temperature=0.0)
NOT_STARTED = "the evaluation could not be started; request it again later"


def _training_run(training_run_id: str, services: ApiServices) -> TrainingRunRecord:
    record = services.training_runs.get(training_run_id)
    if record is None:
        raise NotFound(f"no training run {training_run_id!r}: check the id (GET /training-runs lists yours)")
    return record


def grant_evaluation(
    training_run_id: str, user: str, *, owner: str, services: ApiServices
) -> EvaluationGrant:
    """The owner lets ``user`` evaluate the training run; a repeated grant answers the first one."""
    record = services.training_runs.get(training_run_id)
    if record is None or record.owner != owner:
        raise NotFound(f"no training run {training_run_id!r} of yours: only its owner grants its evaluation")
    try:
        grant = new_grant(record, owner=owner, user=user)
    except SelfGrant as error:
        raise ApiError(str(error)) from None
    if not services.evaluations.put_grant(grant):
        grant = services.evaluations.grant_for(training_run_id, user) or grant
    return grant


def _connection_model(choice: ModelChoice, *, owner: str, services: ApiServices) -> LiveModel:
    # On demand whatever the size: the evaluation waits for its runs as long as an on-demand run takes
    # (12 hours), and a provider's batch jobs may take days.
    config = ModelConfigRequest(
        connection_id=choice.connection_id,
        model_id=choice.model_id,
        sampling=EVALUATION_SAMPLING,
        inference_mode=InferenceMode.ON_DEMAND,
    )
    return live_model_for(config, owner=owner, connection=services.connections.get(choice.connection_id))


def default_tuned(training: TrainingRunRecord, *, services: ApiServices) -> LiveModel:
    """The training connection with the resulting model, where the provider serves it under that name."""
    not_served = provider(training.provider).result_not_served(training.result_model)
    if not_served is not None:
        raise ApiError(not_served)
    if not training.result_model:
        raise Conflict(f"training run {training.training_run_id} recorded no resulting model to call")
    choice = ModelChoice(connection_id=training.connection_id, model_id=training.result_model)
    # The training connection is its owner's: a grantee evaluates through it by the owner's grant.
    return _connection_model(choice, owner=training.owner, services=services)


def _base_model(
    request: CreateEvaluationRequest,
    training: TrainingRunRecord,
    tuned: LiveModel,
    *,
    caller: Caller,
    services: ApiServices,
) -> LiveModel:
    if request.base is not None:
        return _connection_model(request.base, owner=caller.user, services=services)
    return tuned.model_copy(update={"model_id": training.base_model})


def _chosen_base(
    request: CreateEvaluationRequest,
    training: TrainingRunRecord,
    base: LiveModel,
    held_out: tuple[str, ...],
    *,
    caller: Caller,
    services: ApiServices,
) -> EvaluatedModel:
    """The base side: the named run, else the newest reusable live run of the base model, else a new run."""
    if request.base_run_id is None:
        run = reusable_base_run(
            services.runs, training, base, held_out, owner=caller.user, store=services.store
        )
        if run is None or run.live_model is None:
            return EvaluatedModel(live=base)
        return EvaluatedModel(live=run.live_model, run_id=run.run_id, reused=True)
    run = services.runs.get(request.base_run_id)
    if run is None or run.owner != caller.user:
        raise NotFound(
            f"no run {request.base_run_id!r} of yours to reuse as the base run (GET /runs lists runs)"
        )
    try:
        covers_held_out(run, training, held_out, store=services.store)
    except BaseRunProblem as problem:
        raise ApiError(f"run {run.run_id} cannot be the base run: {problem}") from None
    live = run.live_model or base.model_copy(update={"model_id": run.model})
    return EvaluatedModel(live=live, run_id=run.run_id, reused=True)


def new_evaluation(
    training_run_id: str, request: CreateEvaluationRequest, *, caller: Caller, services: ApiServices
) -> EvaluationRecord:
    """Authorize, settle both sides, record the evaluation Running and start its pipeline."""
    training = _training_run(training_run_id, services)
    grant = services.evaluations.grant_for(training_run_id, caller.user)
    try:
        authorization = authorize(training, caller, group=services.settings.evaluators_group, grant=grant)
    except NotPermitted as error:
        raise Forbidden(str(error)) from None
    except NotEvaluable as error:
        raise Conflict(str(error)) from None
    if request.tuned is not None:
        tuned = _connection_model(request.tuned, owner=caller.user, services=services)
    else:
        tuned = default_tuned(training, services=services)
    base = _base_model(request, training, tuned, caller=caller, services=services)
    record = EvaluationRecord(
        evaluation_id=f"eval-{secrets.token_hex(12)}",
        owner=caller.user,
        training_run_id=training.training_run_id,
        training_owner=training.owner,
        package_id=training.package_id,
        package_sha256=training.package_sha256,
        environment_id=training.environment_id,
        environment_version=training.environment_version,
        trained_model=training.result_model,
        tuned=EvaluatedModel(live=tuned),
        base=EvaluatedModel(live=base),
        authorized_by=authorization.by,
        authorized_through=authorization.through,
        authorized_at=authorization.at,
    )
    try:
        with tempfile.TemporaryDirectory() as workdir:
            held_out = held_out_package(record, store=services.store, workdir=Path(workdir)).held_out
    except EvaluationError as error:
        raise Conflict(str(error)) from None
    record.held_out_count = len(held_out)
    record.base = _chosen_base(request, training, base, held_out, caller=caller, services=services)
    if not services.evaluations.create(record):
        raise Conflict(f"evaluation id {record.evaluation_id} is already taken: send the request again")
    _start(record, services)
    services.record_event("EvaluationRequested")
    return record


def _start(record: EvaluationRecord, services: ApiServices) -> None:
    starter = services.evaluation_starter
    try:
        if starter is None:
            raise RuntimeError("EVALUATION_STATE_MACHINE_ARN is not set: only the API starts evaluations")
        starter.start_once(
            record.evaluation_id,
            {
                "evaluation_id": record.evaluation_id,
                "wait_seconds": services.settings.evaluation_wait_seconds,
                "max_checks": services.settings.evaluation_max_checks,
            },
        )
    except Exception:
        logger.exception("could not start the evaluation", extra={"evaluation_id": record.evaluation_id})
        services.evaluations.fail(record.evaluation_id, reason=NOT_STARTED, finished_at=utc_now())
        raise


def request_evaluation(
    training_run_id: str,
    request: CreateEvaluationRequest,
    *,
    caller: Caller,
    services: ApiServices,
    idempotency_key: str | None = None,
    context: LambdaContext | None = None,
) -> EvaluationView:
    """A new evaluation; with an Idempotency-Key, a retry gets the same evaluation."""
    record = create_once(
        lambda: new_evaluation(training_run_id, request, caller=caller, services=services),
        id_of=lambda created: created.evaluation_id,
        read=lambda evaluation_id: evaluation_for(evaluation_id, user=caller.user, services=services),
        noun="evaluation",
        caller=caller.user,
        key=idempotency_key,
        body={"training_run_id": training_run_id, **request.model_dump(mode="json")},
        persistence=services.idempotency,
        context=context,
    )
    return EvaluationView.of(record)


def list_evaluations(
    training_run_id: str, *, owner: str, services: ApiServices, limit: int, next_token: str | None
) -> EvaluationList:
    """The evaluations of the owner's training run, newest first."""
    training_run_of_owner(training_run_id, owner=owner, services=services)
    page = services.evaluations.list_for_training_run(training_run_id, limit=limit, next_token=next_token)
    items = [EvaluationView.of(record) for record in page.items]
    return EvaluationList(items=items, next_token=page.next_token)


def evaluation_view(evaluation_id: str, *, user: str, services: ApiServices) -> EvaluationView:
    return EvaluationView.of(evaluation_for(evaluation_id, user=user, services=services))


def evaluation_for(evaluation_id: str, *, user: str, services: ApiServices) -> EvaluationRecord:
    """The evaluation, for who asked for it and the training run's owner; 404 for anyone else."""
    record = services.evaluations.get(evaluation_id)
    if record is None or user not in (record.owner, record.training_owner):
        raise NotFound(f"no evaluation {evaluation_id!r} of yours: check the id")
    return record


def report_view(evaluation_id: str, *, user: str, services: ApiServices) -> ReportView:
    record = evaluation_for(evaluation_id, user=user, services=services)
    if record.status is not EvaluationStatus.COMPLETED or not record.report_key or not record.report_html_key:
        reason = (
            f": {record.failure_reason}" if record.failure_reason else ": read it again once it is Completed"
        )
        raise Conflict(f"evaluation {evaluation_id} is {record.status.value} and has no report{reason}")
    chunks = services.store.chunks(record.report_key)
    if chunks is None:
        raise NotFound(f"evaluation {evaluation_id}'s report is not in the bucket")
    with closing(chunks):
        report = EvaluationReport.model_validate_json(b"".join(chunks))
    url = services.store.presigned_get_url(
        record.report_html_key, expires_in=services.ttl, download_name=f"{evaluation_id}.html"
    )
    view_url = services.store.presigned_get_url(record.report_html_key, expires_in=services.ttl)
    return ReportView(report=report, html_url=url, view_url=view_url, expires_in=services.ttl)
