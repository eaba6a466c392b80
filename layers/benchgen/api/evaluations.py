"""``/training-runs/{id}/evaluation-grants``, ``/training-runs/{id}/evaluations`` and ``/evaluations/{id}``:
authorize, request and read the evaluation of a trained model against its base on held-out cases.

Which models and runs an evaluation compares is settled before it is recorded
(``benchgen.requests.evaluations``), where a bad request can still be answered with a 4xx; the
EvaluationPipeline then creates the runs chosen, waits for them and compares them.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import Owner, Services, SignedIn
from benchgen.api.errors import responses
from benchgen.api.parameters import EvaluationIdempotencyKey, NextToken, ResourceId
from benchgen.records.evaluations import EvaluationGrant
from benchgen.requests.evaluations import (
    evaluation_view,
    grant_evaluation,
    list_evaluations,
    report_view,
    request_evaluation,
)
from benchgen.requests.schemas.evaluations import (
    CreateEvaluationRequest,
    EvaluationList,
    EvaluationView,
    GrantRequest,
    ReportView,
)

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.post(
    "/training-runs/<training_run_id>/evaluation-grants",
    status_code=201,
    tags=["evaluations"],
    summary="Let another user evaluate your training run (its owner only)",
    responses=responses(201, 400, 404, body=True),
)
def post_grant(
    training_run_id: ResourceId, body: GrantRequest, owner: Owner, services: Services
) -> EvaluationGrant:
    return grant_evaluation(training_run_id, body.user, owner=owner, services=services)


@router.post(
    "/training-runs/<training_run_id>/evaluations",
    status_code=202,
    tags=["evaluations"],
    summary="Evaluate the trained model against its base on the package's held-out cases",
    description="Needs the evaluators permission: the training run's owner in the evaluators group, or a "
    "user its owner granted (POST /training-runs/{id}/evaluation-grants).",
    responses=responses(202, 400, 403, 404, 409, body=True),
)
def post_evaluation(
    training_run_id: ResourceId,
    body: CreateEvaluationRequest,
    caller: SignedIn,
    services: Services,
    idempotency_key: EvaluationIdempotencyKey = None,
) -> EvaluationView:
    return request_evaluation(
        training_run_id,
        body,
        caller=caller,
        services=services,
        idempotency_key=idempotency_key,
        context=router.lambda_context,
    )


@router.get(
    "/training-runs/<training_run_id>/evaluations",
    tags=["evaluations"],
    summary="List the evaluations of your training run, newest first (its owner only)",
    responses=responses(200, 400, 404),
)
def get_training_run_evaluations(
    training_run_id: ResourceId,
    owner: Owner,
    services: Services,
    limit: Annotated[int, Query(ge=1, le=100, description="evaluations per page")] = 20,
    next_token: NextToken = None,
) -> EvaluationList:
    return list_evaluations(
        training_run_id, owner=owner, services=services, limit=limit, next_token=next_token
    )


@router.get(
    "/evaluations/<evaluation_id>",
    tags=["evaluations"],
    summary="Read an evaluation and its verdict",
    responses=responses(200, 404),
)
def get_evaluation(evaluation_id: ResourceId, owner: Owner, services: Services) -> EvaluationView:
    return evaluation_view(evaluation_id, user=owner, services=services)


@router.get(
    "/evaluations/<evaluation_id>/report",
    tags=["evaluations"],
    summary="The comparison report as JSON, with a short-lived URL of its HTML page",
    responses=responses(200, 404, 409),
)
def get_evaluation_report(evaluation_id: ResourceId, owner: Owner, services: Services) -> ReportView:
    return report_view(evaluation_id, user=owner, services=services)
