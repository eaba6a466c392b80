"""``/connections``: a user's connections to training and inference providers, and what each accepts.

A connection never holds a key. A body that carries one (a field named like ``api_key`` or ``token``) is
refused before it is validated, read or stored, and the answer says to put the key in Secrets Manager and
pass its ARN, which must name a secret of the deployment's own account and region (where the functions
will read it).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import Owner, Services
from benchgen.api.errors import responses
from benchgen.api.parameters import NextToken, ResourceId
from benchgen.providers.connections import ConnectionRecord
from benchgen.requests.connections import (
    create_connection,
    list_connections,
    owned_connection,
    remove_connection,
)
from benchgen.requests.schemas.common import ID_PATTERN
from benchgen.requests.schemas.connections import BASE_MODEL_PATTERN, ConnectionList, CreateConnectionRequest
from benchgen.training.export_profiles import PROFILES
from benchgen.vocabulary import Method

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.post(
    "/connections",
    status_code=201,
    tags=["connections"],
    summary="Connect a training and inference provider (keys stay in Secrets Manager)",
    responses=responses(201, 400, body=True),
)
def post_connection(request: CreateConnectionRequest, owner: Owner, services: Services) -> ConnectionRecord:
    return create_connection(request, owner=owner, services=services)


@router.get(
    "/connections",
    tags=["connections"],
    summary="List your connections, newest first; filters keep those whose profile accepts the request",
    responses=responses(200, 400),
)
def get_connections(
    services: Services,
    owner: Owner,
    method: Annotated[
        Method | None, Query(description="only connections that train with this method")
    ] = None,
    export_profile: Annotated[
        str | None,
        Query(pattern=ID_PATTERN, description=f"only connections taking these files: {', '.join(PROFILES)}"),
    ] = None,
    base_model: Annotated[
        str | None,
        Query(pattern=BASE_MODEL_PATTERN, description="only connections that train this base model"),
    ] = None,
    inference: Annotated[bool, Query(description="only connections that answer live runs")] = False,
    limit: Annotated[int, Query(ge=1, le=100, description="connections per page")] = 20,
    next_token: NextToken = None,
) -> ConnectionList:
    return list_connections(
        owner=owner,
        services=services,
        method=method,
        export_profile=export_profile,
        base_model=base_model,
        inference=inference,
        limit=limit,
        next_token=next_token,
    )


@router.get(
    "/connections/<connection_id>",
    tags=["connections"],
    summary="Read one of your connections",
    responses=responses(200, 403, 404),
)
def get_connection(connection_id: ResourceId, owner: Owner, services: Services) -> ConnectionRecord:
    return owned_connection(connection_id, owner=owner, services=services)


@router.delete(
    "/connections/<connection_id>",
    status_code=204,
    tags=["connections"],
    summary="Delete one of your connections (its secret in Secrets Manager is left as it is)",
    responses=responses(204, 403, 404),
)
def delete_connection(connection_id: ResourceId, owner: Owner, services: Services) -> Response[None]:
    remove_connection(connection_id, owner=owner, services=services)
    return Response(status_code=204)
