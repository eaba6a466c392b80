"""The data bucket, its access-log bucket, the tables and the event bus."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Resource = dict[str, Any]


def _bucket_policy(of_type: Callable[[str], dict[str, Resource]], bucket_id: str) -> list[dict[str, Any]]:
    (policy,) = [
        p
        for p in of_type("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    statements: list[dict[str, Any]] = policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


@pytest.mark.parametrize("bucket_id", ["DataBucket", "AccessLogsBucket", "ConsoleAccessLogsBucket"])
def test_buckets_block_every_kind_of_public_access(resources: dict[str, Resource], bucket_id: str) -> None:
    # Given the synthesized stack / When reading the bucket / Then all four public-access switches are on
    block = resources[bucket_id]["Properties"]["PublicAccessBlockConfiguration"]
    assert block == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }


@pytest.mark.parametrize("bucket_id", ["DataBucket", "AccessLogsBucket", "ConsoleAccessLogsBucket"])
def test_buckets_encrypt_objects_at_rest(resources: dict[str, Resource], bucket_id: str) -> None:
    encryption = resources[bucket_id]["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert [rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] for rule in encryption] == ["AES256"]


@pytest.mark.parametrize("bucket_id", ["DataBucket", "AccessLogsBucket", "ConsoleAccessLogsBucket"])
def test_buckets_refuse_requests_without_tls(
    of_type: Callable[[str], dict[str, Resource]], bucket_id: str
) -> None:
    statements = _bucket_policy(of_type, bucket_id)
    denials = [
        s
        for s in statements
        if s["Effect"] == "Deny"
        and s["Action"] == "s3:*"
        and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert len(denials) == 1


def test_data_bucket_keeps_every_version_of_an_upload(resources: dict[str, Resource]) -> None:
    assert resources["DataBucket"]["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}


def test_data_bucket_expires_only_noncurrent_versions_outside_the_sandbox_scratch(
    resources: dict[str, Resource],
) -> None:
    rules = resources["DataBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    (rule,) = [rule for rule in rules if rule.get("Prefix") != "sandbox/"]
    assert rule["Status"] == "Enabled"
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 90}
    assert "ExpirationInDays" not in rule


def test_data_bucket_writes_access_logs_to_the_log_bucket(resources: dict[str, Resource]) -> None:
    logging = resources["DataBucket"]["Properties"]["LoggingConfiguration"]
    assert logging == {"DestinationBucketName": {"Ref": "AccessLogsBucket"}, "LogFilePrefix": "data-bucket/"}


def test_data_bucket_takes_a_cross_origin_put_with_the_publisher_stamp_and_nothing_else(
    resources: dict[str, Resource],
) -> None:
    # The console uploads a bundle to its presigned URL; reading stays a same-origin download or a frame.
    assert resources["DataBucket"]["Properties"]["CorsConfiguration"] == {
        "CorsRules": [
            {
                "AllowedMethods": ["PUT"],
                "AllowedOrigins": ["*"],
                "AllowedHeaders": ["content-type", "x-amz-meta-publisher", "x-amz-meta-publisher-group"],
                "MaxAge": 600,
            }
        ]
    }


def test_data_bucket_survives_stack_deletion(resources: dict[str, Resource]) -> None:
    assert resources["DataBucket"]["DeletionPolicy"] == "Retain"


TABLE_KEYS = {
    "EnvironmentsTable": [("environment_id", "HASH"), ("version", "RANGE")],
    "RunsTable": [("run_id", "HASH")],
    "DatasetsTable": [("dataset_id", "HASH")],
    "IdempotencyTable": [("id", "HASH")],
    "PackagesTable": [("package_id", "HASH")],
    "ConnectionsTable": [("connection_id", "HASH")],
    "TrainingRunsTable": [("training_run_id", "HASH")],
}


@pytest.mark.parametrize(("table_id", "keys"), TABLE_KEYS.items())
def test_tables_use_the_contract_keys(
    resources: dict[str, Resource], table_id: str, keys: list[tuple[str, str]]
) -> None:
    schema = resources[table_id]["Properties"]["KeySchema"]
    assert [(k["AttributeName"], k["KeyType"]) for k in schema] == keys


@pytest.mark.parametrize("table_id", TABLE_KEYS)
def test_tables_are_on_demand_with_point_in_time_recovery(
    resources: dict[str, Resource], table_id: str
) -> None:
    properties = resources[table_id]["Properties"]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert resources[table_id]["DeletionPolicy"] == "Retain"


@pytest.mark.parametrize(
    ("table_id", "indexes"),
    [
        (
            "RunsTable",
            {"by_environment": ("environment_id", "created_at"), "by_status": ("status", "created_at")},
        ),
        ("DatasetsTable", {"by_kind": ("kind", "created_at")}),
        ("PackagesTable", {"by_preparation": ("preparation_id", "created_at")}),
        ("EnvironmentsTable", {}),
        ("ConnectionsTable", {"by_owner": ("owner", "created_at")}),
        (
            "TrainingRunsTable",
            {"by_owner": ("owner", "created_at"), "by_preparation": ("preparation_id", "created_at")},
        ),
        ("EvaluationsTable", {"by_training_run": ("training_run_id", "authorized_at")}),
    ],
)
def test_tables_have_the_indexes_the_api_lists_by(
    resources: dict[str, Resource], table_id: str, indexes: dict[str, tuple[str, str]]
) -> None:
    found = {
        index["IndexName"]: tuple(key["AttributeName"] for key in index["KeySchema"])
        for index in resources[table_id]["Properties"].get("GlobalSecondaryIndexes", [])
    }
    assert found == indexes


def test_idempotency_records_expire_by_their_expiration_attribute(resources: dict[str, Resource]) -> None:
    ttl = resources["IdempotencyTable"]["Properties"]["TimeToLiveSpecification"]
    assert ttl == {"AttributeName": "expiration", "Enabled": True}


def test_domain_events_go_to_the_benchgen_bus(resources: dict[str, Resource]) -> None:
    assert resources["EventBus"]["Properties"]["Name"] == "benchgen"
