"""What ``/connections`` does: a user's connections to training and inference providers, and what each
accepts.

A connection never holds a key. A body that carries one (a field named like ``api_key`` or ``token``) is
refused before it is validated, read or stored, and the answer says to put the key in Secrets Manager and
pass its ARN, which must name a secret of the deployment's own account and region (where the functions
will read it).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from benchgen.errors import Unsupported
from benchgen.providers.checks import check_request, narrow
from benchgen.providers.connections import ConnectionRecord, ConnectionTarget
from benchgen.requests.errors import ApiError, Forbidden, NotFound
from benchgen.requests.schemas.connections import ConnectionList, CreateConnectionRequest
from benchgen.requests.services import ApiServices
from benchgen.settings import Settings
from benchgen.vocabulary import Method


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


def list_connections(
    *,
    owner: str,
    services: ApiServices,
    method: Method | None,
    export_profile: str | None,
    base_model: str | None,
    inference: bool,
    limit: int,
    next_token: str | None,
) -> ConnectionList:
    """The owner's connections, newest first; with any filter, only those whose profile accepts it."""
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


def remove_connection(connection_id: str, *, owner: str, services: ApiServices) -> None:
    """Delete the caller's connection (its secret in Secrets Manager is left as it is)."""
    owned_connection(connection_id, owner=owner, services=services)
    if not services.connections.delete(connection_id, owner=owner):
        raise NotFound(f"no connection {connection_id!r}: it was deleted meanwhile")
    services.record_event("ConnectionDeleted")
