"""``/runs``: create a run (and its upload URL), list runs, and read one run, its files and results."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import Owner, Services
from benchgen.api.errors import responses
from benchgen.api.parameters import NextToken, RunId, RunIdempotencyKey
from benchgen.records.runs import RunStatus
from benchgen.requests.runs import (
    create_run,
    detailed_results,
    list_runs,
    run_config,
    run_detail,
    run_files,
)
from benchgen.requests.schemas.common import ID_PATTERN
from benchgen.requests.schemas.runs import (
    CreatedRun,
    CreateRunRequest,
    DetailedResults,
    RunConfiguration,
    RunDetail,
    RunFiles,
    RunList,
)

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.post(
    "/runs",
    status_code=201,
    tags=["runs"],
    summary="Create a run and get the URL to upload its submission to",
    responses=responses(201, 404, 409, body=True),
)
def post_run(
    body: CreateRunRequest,
    owner: Owner,
    services: Services,
    idempotency_key: RunIdempotencyKey = None,
) -> CreatedRun:
    return create_run(
        body, owner=owner, services=services, idempotency_key=idempotency_key, context=router.lambda_context
    )


@router.get("/runs", tags=["runs"], summary="List runs, newest first", responses=responses(200, 400))
def get_runs(
    services: Services,
    _owner: Owner,
    environment_id: Annotated[
        str | None, Query(pattern=ID_PATTERN, description="only runs of this environment")
    ] = None,
    status: Annotated[RunStatus | None, Query(description="only runs in this status")] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="runs per page")] = 20,
    next_token: NextToken = None,
) -> RunList:
    return list_runs(
        services=services, environment_id=environment_id, status=status, limit=limit, next_token=next_token
    )


@router.get("/runs/<run_id>", tags=["runs"], summary="Read a run", responses=responses(200, 404))
def get_run(run_id: RunId, services: Services, _owner: Owner) -> RunDetail:
    # The resolver hands the path segment as sent, percent-encoded; an id the API issued never holds '%',
    # so only an id no run can have reads differently decoded, and is then named as its uploader wrote it.
    return run_detail(run_id, services=services)


@router.get(
    "/runs/<run_id>/files",
    tags=["runs"],
    summary="The run's files with short-lived download URLs",
    responses=responses(200, 404),
)
def get_run_files(run_id: RunId, services: Services, _owner: Owner) -> RunFiles:
    return run_files(run_id, services=services)


@router.get(
    "/runs/<run_id>/detailed-results",
    tags=["runs"],
    summary="Summary and breakdowns of the run's detailed results, with a URL to the per-case file",
    responses=responses(200, 404),
)
def get_detailed_results(run_id: RunId, services: Services, _owner: Owner) -> DetailedResults:
    return detailed_results(run_id, services=services)


@router.get(
    "/runs/<run_id>/config",
    tags=["runs"],
    summary="The run's configuration (its owner only)",
    responses=responses(200, 403, 404),
)
def get_run_config(run_id: RunId, owner: Owner, services: Services) -> RunConfiguration:
    return run_config(run_id, owner=owner, services=services)
