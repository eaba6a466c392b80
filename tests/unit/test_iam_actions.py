"""The IAM requests the local cloud derives from an API operation and its parameters."""

from __future__ import annotations

import pytest

from localcloud.iam.actions import Request, Secret, UnknownOperationError, Where, requests_for

WHERE = Where(region="eu-west-1", account="123456789012", secret=lambda secret_id: Secret(f"arn:{secret_id}"))
TABLE = "arn:aws:dynamodb:eu-west-1:123456789012:table/runs"


def test_head_object_is_authorized_as_get_object_and_a_version_as_get_object_version() -> None:
    # given a HEAD of an object and a GET of one version of it
    head = requests_for("s3", "HeadObject", {"Bucket": "data", "Key": "runs/r1/a.json"}, WHERE)
    versioned = requests_for("s3", "GetObject", {"Bucket": "data", "Key": "k", "VersionId": "v1"}, WHERE)

    # then S3 asks for s3:GetObject on the object, and s3:GetObjectVersion for the version
    assert head == [Request("s3:GetObject", "arn:aws:s3:::data/runs/r1/a.json")]
    assert versioned == [Request("s3:GetObjectVersion", "arn:aws:s3:::data/k")]


def test_a_listing_is_list_bucket_on_the_bucket_with_its_prefix_as_condition_key() -> None:
    listed = requests_for("s3", "ListObjectsV2", {"Bucket": "data", "Prefix": "runs/r1/"}, WHERE)

    assert listed == [Request("s3:ListBucket", "arn:aws:s3:::data", (("s3:prefix", "runs/r1/"),))]


def test_a_copy_reads_its_source_version_and_writes_its_target() -> None:
    copied = requests_for(
        "s3",
        "CopyObject",
        {"Bucket": "data", "Key": "runs/r1/b", "CopySource": "data/submissions/r1/a%20b?versionId=v7"},
        WHERE,
    )

    assert copied == [
        Request("s3:GetObjectVersion", "arn:aws:s3:::data/submissions/r1/a b"),
        Request("s3:PutObject", "arn:aws:s3:::data/runs/r1/b"),
    ]


def test_a_query_of_an_index_is_authorized_on_the_index() -> None:
    queried = requests_for("dynamodb", "Query", {"TableName": "runs", "IndexName": "by_status"}, WHERE)

    assert queried == [Request("dynamodb:Query", f"{TABLE}/index/by_status")]


def test_each_item_of_a_transaction_is_its_own_action_on_its_own_table() -> None:
    items = [{"Put": {"TableName": "runs"}}, {"ConditionCheck": {"TableName": "datasets"}}]

    requests = requests_for("dynamodb", "TransactWriteItems", {"TransactItems": items}, WHERE)

    assert requests == [
        Request("dynamodb:PutItem", TABLE),
        Request("dynamodb:ConditionCheckItem", "arn:aws:dynamodb:eu-west-1:123456789012:table/datasets"),
    ]


def test_starting_a_training_job_also_passes_its_role_to_sagemaker() -> None:
    params = {"TrainingJobName": "BenchGen-T1", "RoleArn": "arn:aws:iam::123456789012:role/trainer"}

    requests = requests_for("sagemaker", "CreateTrainingJob", params, WHERE)

    assert requests == [
        Request(
            "sagemaker:CreateTrainingJob", "arn:aws:sagemaker:eu-west-1:123456789012:training-job/benchgen-t1"
        ),
        Request(
            "iam:PassRole",
            "arn:aws:iam::123456789012:role/trainer",
            (("iam:PassedToService", "sagemaker.amazonaws.com"),),
        ),
    ]


def test_an_operation_with_no_known_action_is_refused_naming_the_table_to_add_it_to() -> None:
    with pytest.raises(UnknownOperationError) as unknown:
        requests_for("s3", "PutBucketPolicy", {"Bucket": "data"}, WHERE)

    assert "knows no IAM action for s3:PutBucketPolicy: add it to localcloud.iam.actions" in str(
        unknown.value
    )
