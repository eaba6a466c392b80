"""DynamoDB's item size quota on the local cloud: every write that makes an item larger than 400 KB fails
as DynamoDB answers it, and leaves the item as it was."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud

TOO_LARGE = "Item size has exceeded the maximum allowed size"
TOO_LARGE_TO_UPDATE = "Item size to update has exceeded the maximum allowed size"


def _runs_table(cloud: LocalCloud) -> str:
    return next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs"))


def _refusal(call: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as refused:
        call()
    error: dict[str, Any] = refused.value.response["Error"]
    return error


def test_putting_an_item_over_400_kb_fails_with_dynamodbs_validation_error(cloud: LocalCloud) -> None:
    # Given the runs table
    dynamodb, table = cloud.client("dynamodb"), _runs_table(cloud)
    # When an item of 410,000 bytes is put
    item = {"run_id": {"S": "r-large"}, "blob": {"S": "x" * 410_000}}
    error = _refusal(lambda: dynamodb.put_item(TableName=table, Item=item))
    # Then DynamoDB's error answers it, and nothing was stored
    assert (error["Code"], error["Message"]) == ("ValidationException", TOO_LARGE)
    assert "Item" not in dynamodb.get_item(TableName=table, Key={"run_id": {"S": "r-large"}})


def test_an_update_inside_a_map_that_passes_400_kb_fails_and_leaves_the_item_as_it_was(
    cloud: LocalCloud,
) -> None:
    # Given a run item whose files map holds 300,000 bytes
    dynamodb, table = cloud.client("dynamodb"), _runs_table(cloud)
    key = {"run_id": {"S": "r-growing"}}
    files = {"M": {"a": {"S": "x" * 300_000}}}
    dynamodb.put_item(TableName=table, Item={**key, "files": files})

    # When one update sets another 200,000 bytes inside the map (as RunsRepo.add_files writes a file)
    def grow() -> None:
        dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET #files.#b = :b",
            ExpressionAttributeNames={"#files": "files", "#b": "b"},
            ExpressionAttributeValues={":b": {"S": "y" * 200_000}},
        )

    error = _refusal(grow)

    # Then it is refused as DynamoDB refuses it, and the item still holds only what it held
    assert (error["Code"], error["Message"]) == ("ValidationException", TOO_LARGE_TO_UPDATE)
    stored = dynamodb.get_item(TableName=table, Key=key)["Item"]
    assert stored == {**key, "files": files}
    # and an update that stays under the quota still goes through
    dynamodb.update_item(
        TableName=table,
        Key=key,
        UpdateExpression="SET #files.#b = :b",
        ExpressionAttributeNames={"#files": "files", "#b": "b"},
        ExpressionAttributeValues={":b": {"S": "small"}},
    )
    stored = dynamodb.get_item(TableName=table, Key=key)["Item"]
    assert stored["files"]["M"]["b"] == {"S": "small"}


def test_an_update_that_creates_an_item_over_400_kb_fails_and_creates_nothing(cloud: LocalCloud) -> None:
    # Given no item for the key
    dynamodb, table = cloud.client("dynamodb"), _runs_table(cloud)
    key = {"run_id": {"S": "r-new"}}

    # When an update would create it with a map of 410,000 bytes
    def create() -> None:
        dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET #m = :m",
            ExpressionAttributeNames={"#m": "m"},
            ExpressionAttributeValues={":m": {"M": {"a": {"S": "x" * 410_000}}}},
        )

    error = _refusal(create)
    # Then it is refused and no item exists
    assert (error["Code"], error["Message"]) == ("ValidationException", TOO_LARGE_TO_UPDATE)
    assert "Item" not in dynamodb.get_item(TableName=table, Key=key)
