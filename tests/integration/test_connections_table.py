"""The connections table on moto: one item per id, the owner's connections newest first, owner-only delete."""

from __future__ import annotations

import pytest

from benchgen.aws.tables.connections import ConnectionsRepo
from benchgen.providers.profiles import PROVIDER_CAPABILITIES, ProviderKind
from benchgen.records.connections import ConnectionRecord
from benchgen.settings import Settings


def _connection(connection_id: str, minute: int, *, owner: str = "user-a") -> ConnectionRecord:
    return ConnectionRecord(
        connection_id=connection_id,
        owner=owner,
        name=f"bedrock {connection_id}",
        provider=ProviderKind.BEDROCK,
        region="us-east-1",
        role_arn="arn:aws:iam::123456789012:role/bedrock-customization",
        profile=PROVIDER_CAPABILITIES[ProviderKind.BEDROCK],
        created_at=f"2026-06-01T10:{minute:02d}:00.000000Z",
    )


@pytest.fixture
def connections(aws: Settings) -> ConnectionsRepo:
    return ConnectionsRepo(aws.connections_table)


def test_a_stored_connection_reads_back_whole(connections: ConnectionsRepo) -> None:
    record = _connection("c1", 1)
    assert connections.put(record)
    assert connections.get("c1") == record
    assert connections.get("c2") is None


def test_storing_a_taken_id_again_keeps_the_first(connections: ConnectionsRepo) -> None:
    connections.put(_connection("c1", 1))
    assert connections.put(_connection("c1", 2, owner="user-b")) is False
    stored = connections.get("c1")
    assert stored is not None and stored.owner == "user-a"


def test_an_owners_connections_are_listed_newest_first_in_pages(connections: ConnectionsRepo) -> None:
    for minute, connection_id in enumerate(["c1", "c2", "c3"], start=1):
        connections.put(_connection(connection_id, minute))
    connections.put(_connection("theirs", 9, owner="user-b"))
    first = connections.list(owner="user-a", limit=2)
    assert [c.connection_id for c in first.items] == ["c3", "c2"]
    rest = connections.list(owner="user-a", limit=2, next_token=first.next_token)
    assert [c.connection_id for c in rest.items] == ["c1"] and rest.next_token is None


def test_only_the_owner_deletes_a_connection(connections: ConnectionsRepo) -> None:
    connections.put(_connection("c1", 1))
    assert connections.delete("c1", owner="user-b") is False
    assert connections.get("c1") is not None
    assert connections.delete("c1", owner="user-a") is True
    assert connections.get("c1") is None
    assert connections.delete("c1", owner="user-a") is False
