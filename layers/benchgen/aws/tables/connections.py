"""The provider connections table."""

from __future__ import annotations

import builtins
from collections.abc import Callable

from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page, encode_token
from benchgen.providers.connections import ConnectionRecord


class ConnectionsRepo(Table):
    """Provider connections (pk ``connection_id``; GSI ``by_owner`` sorted by ``created_at``)."""

    def put(self, record: ConnectionRecord) -> bool:
        """Store a new connection; ``False`` (and nothing changed) when the id is taken."""
        return self._put_if_absent(record, "connection_id")

    def get(self, connection_id: str) -> ConnectionRecord | None:
        return self._get(ConnectionRecord, {"connection_id": connection_id})

    def list(
        self,
        *,
        owner: str,
        limit: int = 20,
        next_token: str | None = None,
        keep: Callable[[ConnectionRecord], bool] | None = None,
    ) -> Page[ConnectionRecord]:
        """The owner's connections, newest first; with ``keep``, only those it keeps.

        A filtered page reads on until it holds ``limit`` connections or the owner has no more, so a
        short page is the last one.
        """
        kept: builtins.list[ConnectionRecord] = []
        token = next_token
        while True:
            items, after = self._newest_first(
                index="by_owner",
                partition_attribute="owner",
                partitions=[owner],
                sort_attribute="created_at",
                key_attribute="connection_id",
                limit=limit,
                next_token=token,
            )
            for position, item in enumerate(items):
                record = ConnectionRecord.model_validate(item)
                if keep is not None and not keep(record):
                    continue
                kept.append(record)
                if len(kept) == limit:
                    if position < len(items) - 1:
                        after = encode_token(
                            {"created_at": item["created_at"], "connection_id": item["connection_id"]}
                        )
                    return Page(items=kept, next_token=after)
            if after is None:
                return Page(items=kept, next_token=None)
            token = after

    def delete(self, connection_id: str, *, owner: str) -> bool:
        """Delete the connection if ``owner`` owns it; ``False`` (nothing changed) if not, or if gone."""
        return (
            self._conditional(
                "delete_item",
                TableName=self.table_name,
                Key={"connection_id": {"S": connection_id}},
                ConditionExpression="#o = :o",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":o": {"S": owner}},
            )
            is not None
        )
