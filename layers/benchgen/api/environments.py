"""``/environments``: ask for a bundle upload URL, and list registered environment versions."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import ApiServices, Owner, Services
from benchgen.api.errors import Conflict, responses
from benchgen.api.schemas import CreateEnvironmentRequest, EnvironmentList, EnvironmentUpload, NextToken
from benchgen.pipeline.keys import bundle_key

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


def request_bundle_upload(request: CreateEnvironmentRequest, *, services: ApiServices) -> EnvironmentUpload:
    """A URL to upload a new environment version's bundle to; a version is never uploaded twice."""
    existing = services.environments.get(request.environment_id, request.version)
    if existing is not None:
        raise Conflict(
            f"environment {request.environment_id!r} version {request.version!r} already exists "
            f"({existing.status.value}): upload the bundle as a new version"
        )
    key = bundle_key(request.environment_id, request.version)
    # An upload that landed but is not registered yet is the same version in flight.
    if services.store.size(key) is not None:
        raise Conflict(
            f"a bundle for environment {request.environment_id!r} version {request.version!r} was already "
            "uploaded and is being registered: wait for it, or upload as a new version"
        )
    url = services.store.presigned_put_url(key, expires_in=services.ttl)
    services.record_event("EnvironmentUploadRequested")
    return EnvironmentUpload(
        environment_id=request.environment_id,
        version=request.version,
        bundle_key=key,
        upload_url=url,
        expires_in=services.ttl,
    )


@router.post(
    "/environments",
    status_code=201,
    tags=["environments"],
    summary="Get the URL to upload a new environment version's bundle to",
    responses=responses(201, 409, body=True),
)
def post_environment(body: CreateEnvironmentRequest, services: Services, _owner: Owner) -> EnvironmentUpload:
    return request_bundle_upload(body, services=services)


@router.get(
    "/environments",
    tags=["environments"],
    summary="List environment versions (registered and rejected)",
    responses=responses(200, 400),
)
def get_environments(
    services: Services,
    _owner: Owner,
    limit: Annotated[int, Query(ge=1, le=100, description="versions per page")] = 20,
    next_token: NextToken = None,
) -> EnvironmentList:
    page = services.environments.list(limit=limit, next_token=next_token)
    return EnvironmentList(items=page.items, next_token=page.next_token)
