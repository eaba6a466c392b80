"""The plumbing every table's repository shares: conditional writes, reads by key, newest-first pages.

Every item goes through :mod:`benchgen.aws.items` (``to_item`` and ``from_item``). Lists are newest
first and paginated with an opaque ``next_token`` (see :mod:`benchgen.ports.pages`); a token a listing
did not hand out raises ``InvalidNextToken``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel

from benchgen.aws import clients
from benchgen.aws.items import ModelT, from_item, plain_item, to_item
from benchgen.ports.pages import Page, decode_token, encode_token


def _is_condition_failure(error: ClientError) -> bool:
    return bool(error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


@dataclass(frozen=True)
class EqualsFilter:
    """An equality filter applied after the key condition (``attribute = value``)."""

    attribute: str
    value: str


class Table:
    def __init__(self, table_name: str, *, client: Any = None) -> None:
        self.table_name = table_name
        self._injected_client = client

    @property
    def _client(self) -> Any:
        # Resolved per call, so a repository built before a mock started still reaches the mock.
        return self._injected_client or clients.dynamodb()

    def _conditional(self, operation: str, **request: Any) -> dict[str, Any] | None:
        """The answer to the client's ``operation`` (a conditional write) with ``request``; ``None``, and
        nothing changed, when the write's condition does not hold."""
        try:
            response: dict[str, Any] = getattr(self._client, operation)(**request)
        except ClientError as error:
            if _is_condition_failure(error):
                return None
            raise
        return response

    def _put_if_absent(self, record: BaseModel, key_attribute: str) -> bool:
        return (
            self._conditional(
                "put_item",
                TableName=self.table_name,
                Item=to_item(record),
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": key_attribute},
            )
            is not None
        )

    def _conditional_update(
        self,
        key: Mapping[str, str],
        expression: str,
        condition: str,
        names: Mapping[str, str],
        values: Mapping[str, Any],
    ) -> bool:
        """Apply ``expression`` to the item at ``key`` if ``condition`` holds; ``False`` (nothing changed)
        when it does not."""
        return (
            self._conditional(
                "update_item",
                TableName=self.table_name,
                Key={name: {"S": value} for name, value in key.items()},
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=dict(names),
                ExpressionAttributeValues=dict(values),
            )
            is not None
        )

    def _get(self, model: type[ModelT], key: Mapping[str, str]) -> ModelT | None:
        response = self._client.get_item(
            TableName=self.table_name,
            Key={name: {"S": value} for name, value in key.items()},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return from_item(model, item) if item else None

    def _newest_page(
        self,
        model: type[ModelT],
        *,
        index: str,
        partition_attribute: str,
        partitions: Sequence[str],
        key_attribute: str,
        limit: int,
        next_token: str | None,
    ) -> Page[ModelT]:
        """A page of ``model`` records from a GSI sorted on ``created_at``, newest first."""
        items, token = self._newest_first(
            index=index,
            partition_attribute=partition_attribute,
            partitions=partitions,
            sort_attribute="created_at",
            key_attribute=key_attribute,
            limit=limit,
            next_token=next_token,
        )
        return Page(items=[model.model_validate(item) for item in items], next_token=token)

    def _newest_first(
        self,
        *,
        index: str,
        partition_attribute: str,
        partitions: Sequence[str],
        sort_attribute: str,
        key_attribute: str,
        limit: int,
        next_token: str | None,
        where: EqualsFilter | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Items of ``partitions`` of a GSI, merged newest first; returns (items, next_token).

        The position is the last item's (sort value, table key), so one token format serves a single
        partition and a merge of several alike. Each partition is read from just after the position,
        in pages of ``limit + 1``, until it has more than ``limit`` items past every item that shares
        the boundary's sort value (ties on the timestamp are broken by the table key).
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        cursor: tuple[str, str] | None = None
        if next_token is not None:
            position = decode_token(next_token, (sort_attribute, key_attribute))
            cursor = (position[sort_attribute], position[key_attribute])
        merged: list[dict[str, Any]] = []
        for partition in partitions:
            merged.extend(
                self._partition_after(
                    index=index,
                    partition=(partition_attribute, partition),
                    sort_attribute=sort_attribute,
                    key_attribute=key_attribute,
                    cursor=cursor,
                    limit=limit,
                    where=where,
                )
            )
        merged.sort(key=lambda item: (item[sort_attribute], item[key_attribute]), reverse=True)
        if len(merged) <= limit:
            return merged, None
        page = merged[:limit]
        last = page[-1]
        return page, encode_token({sort_attribute: last[sort_attribute], key_attribute: last[key_attribute]})

    def _partition_after(
        self,
        *,
        index: str,
        partition: tuple[str, str],
        sort_attribute: str,
        key_attribute: str,
        cursor: tuple[str, str] | None,
        limit: int,
        where: EqualsFilter | None,
    ) -> list[dict[str, Any]]:
        names = {"#pk": partition[0]}
        values: dict[str, Any] = {":pk": {"S": partition[1]}}
        condition = "#pk = :pk"
        if cursor is not None:
            condition += " AND #sk <= :sk"
            names["#sk"] = sort_attribute
            values[":sk"] = {"S": cursor[0]}
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": limit + 1,
        }
        if where is not None:
            names["#f"] = where.attribute
            values[":f"] = {"S": where.value}
            request["FilterExpression"] = "#f = :f"
        kept: list[dict[str, Any]] = []
        while True:
            response = self._client.query(**request)
            for raw in response.get("Items", []):
                item = plain_item(raw)
                if cursor is not None and (item[sort_attribute], item[key_attribute]) >= cursor:
                    continue
                kept.append(item)
            last_key = response.get("LastEvaluatedKey")
            if last_key is None:
                return kept
            if len(kept) > limit and kept[-1][sort_attribute] < kept[limit - 1][sort_attribute]:
                return kept
            request["ExclusiveStartKey"] = last_key
