"""``/environments``: ask for a bundle upload URL, and list registered environment versions."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import Owner, Services, SignedIn
from benchgen.api.errors import responses
from benchgen.api.parameters import NextToken
from benchgen.requests.environments import list_environments, request_bundle_upload
from benchgen.requests.schemas.environments import (
    CreateEnvironmentRequest,
    EnvironmentList,
    EnvironmentUpload,
)

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.post(
    "/environments",
    status_code=201,
    tags=["environments"],
    summary="Get the URL to upload a new environment version's bundle to (its publishers only)",
    responses=responses(201, 403, 409, body=True),
)
def post_environment(
    body: CreateEnvironmentRequest, services: Services, caller: SignedIn
) -> EnvironmentUpload:
    return request_bundle_upload(body, caller=caller, services=services)


@router.get(
    "/environments",
    tags=["environments"],
    summary="List environment versions (registered and rejected), each with its environment's owner and "
    "publisher group",
    responses=responses(200, 400),
)
def get_environments(
    services: Services,
    _owner: Owner,
    limit: Annotated[int, Query(ge=1, le=100, description="versions per page")] = 20,
    next_token: NextToken = None,
) -> EnvironmentList:
    return list_environments(services=services, limit=limit, next_token=next_token)
