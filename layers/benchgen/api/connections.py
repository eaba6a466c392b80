"""``/connections``: a user's connections to training and inference providers, and what each accepts.

A connection never holds a key. A body that carries one (a field named like ``api_key`` or ``token``) is
refused before it is validated, read or stored, and the answer says to put the key in Secrets Manager and
pass its ARN, which must name a secret of the deployment's own account and region (where the functions
will read it).
"""

from __future__ import annotations

import re
import secrets
import time
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchgen.api import ApiServices, Owner, Services
from benchgen.api.errors import ApiError, Forbidden, NotFound, responses
from benchgen.api.schemas import ID_PATTERN, NextToken, ResourceId, Text
from benchgen.providers.profiles import ConnectionProfile, Unsupported, check_request, narrow
from benchgen.records.connections import ConnectionRecord, ConnectionTarget
from benchgen.settings import Settings
from benchgen.training.export_profiles import PROFILES
from benchgen.vocabulary import Method

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated

# Field names that say "a key is here": api_key, apiKey, key, secret, client_secret, password, token...
_KEY_FIELD = re.compile(r"(?:key|secret|password|token)$")
# Provider model ids: Bedrock's "amazon.nova-lite-v1:0", Hugging Face's "Qwen/Qwen2.5-7B-Instruct".
BASE_MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}$"


class KeyInRequest(ApiError):
    """A key was sent in the body; it is not kept, logged or echoed."""


def _names_a_key(field: str) -> bool:
    return bool(_KEY_FIELD.search(field.lower().replace("_", "").replace("-", "")))


class CreateConnectionRequest(ConnectionTarget):
    """A new connection. Its key, if the provider needs one, stays in Secrets Manager: pass ``secret_arn``."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[Text, Field(min_length=1, max_length=128, examples=["together"])]
    profile: ConnectionProfile | None = Field(
        default=None,
        description="what the connection accepts, within its provider's capabilities; absent takes them all",
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_keys(cls, data: Any) -> Any:
        # Raised as an API error rather than a validation error, so that it is a 400 naming only the
        # field, and so nothing (not even pydantic's error list) ever holds the value.
        if isinstance(data, dict):
            named = sorted(
                str(field)
                for field in data
                if str(field) not in cls.model_fields and _names_a_key(str(field))
            )
            if named:
                raise KeyInRequest(
                    f"{', '.join(named)}: a connection never takes a key itself. Put the key in AWS Secrets "
                    "Manager (in this deployment's account and region) and pass the secret's ARN as "
                    "secret_arn; the key sent was not kept"
                )
        return data


class ConnectionList(BaseModel):
    items: list[ConnectionRecord]
    next_token: str | None = Field(default=None, description="absent on the last page")


def new_connection_id() -> str:
    """``conn-`` and 32 hex digits: milliseconds since the epoch, then 80 random bits."""
    return f"conn-{time.time_ns() // 1_000_000:012x}{secrets.token_hex(10)}"


def check_secret_arn(secret_arn: str, settings: Settings) -> None:
    """Refuse a secret outside the deployment's account and region: the functions could not read it."""
    if settings.account_id is None or settings.region is None:
        raise RuntimeError("ACCOUNT_ID and AWS_REGION must be set to check a connection's secret_arn")
    _, _, _, region, account, *_ = secret_arn.split(":")
    if (account, region) != (settings.account_id, settings.region):
        raise ApiError(
            f"secret_arn names a secret of account {account} in {region}: the secret must be in this "
            f"deployment's account {settings.account_id} and region {settings.region}, where the platform "
            "reads it; create it there and pass that ARN"
        )


def create_connection(
    request: CreateConnectionRequest, *, owner: str, services: ApiServices
) -> ConnectionRecord:
    """Record ``owner``'s connection with its profile narrowed from its provider's capabilities."""
    if request.secret_arn is not None:
        check_secret_arn(request.secret_arn, services.settings)
    record = ConnectionRecord(
        connection_id=new_connection_id(),
        owner=owner,
        profile=narrow(request.provider, request.profile),
        **request.model_dump(include=set(ConnectionTarget.model_fields)),
    )
    if not services.connections.put(record):
        raise RuntimeError(f"connection id {record.connection_id} was taken: 80 random bits collided")
    services.record_event("ConnectionCreated")
    return record


def owned_connection(connection_id: str, *, owner: str, services: ApiServices) -> ConnectionRecord:
    """The caller's connection: 404 when there is none, 403 when it is someone else's."""
    connection = services.connections.get(connection_id)
    if connection is None:
        raise NotFound(f"no connection {connection_id!r}: check the id (GET /connections lists yours)")
    if connection.owner != owner:
        raise Forbidden("only the connection's owner can read or delete it")
    return connection


def _accepts(connection: ConnectionRecord, **request: Any) -> bool:
    try:
        check_request(connection, **request)
    except Unsupported:
        return False
    return True


# ---- routes ----------------------------------------------------------------------------------------------


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
    request: dict[str, Any] = {
        "method": method,
        "export_profile": export_profile,
        "base_model": base_model,
        "inference": inference,
    }
    filtered = any(value not in (None, False) for value in request.values())
    page = services.connections.list(
        owner=owner,
        limit=limit,
        next_token=next_token,
        keep=(lambda connection: _accepts(connection, **request)) if filtered else None,
    )
    return ConnectionList(items=page.items, next_token=page.next_token)


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
    owned_connection(connection_id, owner=owner, services=services)
    if not services.connections.delete(connection_id, owner=owner):
        raise NotFound(f"no connection {connection_id!r}: it was deleted meanwhile")
    services.record_event("ConnectionDeleted")
    return Response(status_code=204)
