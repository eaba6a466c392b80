"""What ``/connections`` does, on the in-memory fakes: a connection is its owner's, holds no key, names a
secret of the deployment's own account and region, and is listed by what its profile accepts."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.requests.connections import (
    create_connection,
    list_connections,
    owned_connection,
    remove_connection,
)
from benchgen.requests.errors import ApiError, Forbidden, NotFound
from benchgen.requests.schemas.connections import CreateConnectionRequest, KeyInRequest
from benchgen.vocabulary import Method
from tests.api_services import Events, memory_services
from tests.connection_bodies import BEDROCK, SAGEMAKER, SECRET_ARN, TOGETHER
from tests.fakes import MemoryConnections


def _create(body: dict[str, Any], *, owner: str = "alice", connections: MemoryConnections) -> str:
    request = CreateConnectionRequest.model_validate(body)
    services = memory_services(connections=connections)
    return create_connection(request, owner=owner, services=services).connection_id


def _listed(connections: MemoryConnections, **filters: Any) -> set[str]:
    wanted: dict[str, Any] = {"method": None, "export_profile": None, "base_model": None, "inference": False}
    listed = list_connections(
        owner="alice",
        services=memory_services(connections=connections),
        limit=20,
        next_token=None,
        **(wanted | filters),
    )
    return {item.connection_id for item in listed.items}


def test_a_connection_is_recorded_with_its_providers_whole_profile() -> None:
    connections, events = MemoryConnections(), Events()

    created = create_connection(
        CreateConnectionRequest.model_validate(TOGETHER),
        owner="alice",
        services=memory_services(connections=connections, events=events),
    )

    assert created.connection_id.startswith("conn-")
    assert (created.owner, created.secret_arn) == ("alice", SECRET_ARN)
    assert created.profile.export_profiles == [
        "openai-chat",
        "openai-preference",
        "together-sft",
        "together-dpo",
        "openai-rft",
    ]
    assert connections.records == {created.connection_id: created}
    assert events == ["ConnectionCreated"]


def test_a_key_in_the_body_is_refused_pointing_to_secrets_manager() -> None:
    with pytest.raises(KeyInRequest) as refused:
        CreateConnectionRequest.model_validate({**TOGETHER, "api_key": "sk-planted-7f3a9c1e5b"})

    assert str(refused.value) == (
        "api_key: a connection never takes a key itself. Put the key in AWS Secrets Manager (in this "
        "deployment's account and region) and pass the secret's ARN as secret_arn; the key sent was not kept"
    )


def test_a_secret_of_another_account_is_refused_naming_both() -> None:
    elsewhere = SECRET_ARN.replace("123456789012", "210987654321")
    connections = MemoryConnections()

    with pytest.raises(ApiError) as refused:
        _create({**TOGETHER, "secret_arn": elsewhere}, connections=connections)

    assert str(refused.value) == (
        "secret_arn names a secret of account 210987654321 in us-east-1: the secret must be in this "
        "deployment's account 123456789012 and region us-east-1, where the platform reads it; create it "
        "there and pass that ARN"
    )
    assert connections.records == {}


def test_the_filters_keep_the_connections_whose_profile_accepts_the_request() -> None:
    connections = MemoryConnections()
    together = _create(TOGETHER, connections=connections)
    bedrock = _create(BEDROCK, connections=connections)
    sagemaker = _create(SAGEMAKER, connections=connections)

    assert _listed(connections) == {together, bedrock, sagemaker}
    assert _listed(connections, method=Method.PREFERENCE) == {together, sagemaker}
    assert _listed(connections, export_profile="bedrock-conversation") == {bedrock}
    # the sagemaker connection names no endpoint, so it cannot answer live runs
    assert _listed(connections, inference=True) == {together, bedrock}


def test_users_list_and_read_only_their_own_connections() -> None:
    connections = MemoryConnections()
    mine = _create(TOGETHER, connections=connections)
    _create(BEDROCK, owner="bob", connections=connections)

    assert _listed(connections) == {mine}
    with pytest.raises(Forbidden, match="only the connection's owner can read or delete it"):
        owned_connection(mine, owner="bob", services=memory_services(connections=connections))


def test_only_the_owner_deletes_a_connection_and_then_it_is_gone() -> None:
    connections, events = MemoryConnections(), Events()
    mine = _create(TOGETHER, connections=connections)
    services = memory_services(connections=connections, events=events)

    with pytest.raises(Forbidden):
        remove_connection(mine, owner="bob", services=services)
    remove_connection(mine, owner="alice", services=services)

    assert events == ["ConnectionDeleted"]
    with pytest.raises(NotFound) as gone:
        owned_connection(mine, owner="alice", services=services)
    assert str(gone.value) == f"no connection {mine!r}: check the id (GET /connections lists yours)"
