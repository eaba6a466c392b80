"""Where preparations are kept: their table, and their prefix of the data bucket that triggers nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Resource = dict[str, Any]


def test_preparations_are_kept_by_id_and_listed_by_owner_newest_first(resources: dict[str, Resource]) -> None:
    table = resources["PreparationsTable"]
    properties = table["Properties"]
    assert [(k["AttributeName"], k["KeyType"]) for k in properties["KeySchema"]] == [
        ("preparation_id", "HASH")
    ]
    (index,) = properties["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "by_owner"
    assert [(k["AttributeName"], k["KeyType"]) for k in index["KeySchema"]] == [
        ("owner", "HASH"),
        ("created_at", "RANGE"),
    ]
    assert index["Projection"] == {"ProjectionType": "ALL"}
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    assert table["DeletionPolicy"] == "Retain"


def test_nothing_is_triggered_by_or_expires_what_a_preparation_writes(
    resources: dict[str, Resource], of_type: Callable[[str], dict[str, Resource]]
) -> None:
    (notifications,) = of_type("Custom::S3BucketNotifications").values()
    configuration = notifications["Properties"]["NotificationConfiguration"]
    prefixes = [
        rule["Value"]
        for target in configuration["LambdaFunctionConfigurations"]
        for rule in target["Filter"]["Key"]["FilterRules"]
        if rule["Name"] == "prefix"
    ]
    assert prefixes and not [prefix for prefix in prefixes if "preparations/".startswith(prefix)]
    rules = resources["DataBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    assert not [
        rule
        for rule in rules
        if "ExpirationInDays" in rule and "preparations/".startswith(rule.get("Prefix", ""))
    ]
