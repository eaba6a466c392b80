"""Durable state: the data bucket (with its access-log bucket) and the DynamoDB tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from benchgen.aws.sandbox import SANDBOX_PREFIX
from benchgen.bucket_layout import judging_batch_input_key, judging_batch_output_prefix
from benchgen.ownership import PUBLISHER_GROUP_KEY, PUBLISHER_KEY
from infra.constructs import set_logical_id

# Prefixes of the data bucket; each trigger prefix belongs to exactly one function.
ENVIRONMENTS_PREFIX = "environments/"
SUBMISSIONS_PREFIX = "submissions/"
PREDICTIONS_PREFIX = "predictions/"
RUNS_PREFIX = "runs/"
# Where providers' batch jobs leave their output (see benchgen.bucket_layout.BATCH_OUTPUT).
BATCH_OUTPUT_PREFIX = "batch-output/"
# A judging pass's batch jobs: their records, and their output (benchgen.bucket_layout.judging_batch_*).
JUDGING_BATCH_RECORDS = judging_batch_input_key("*", "*")
JUDGING_BATCH_OUTPUT = judging_batch_output_prefix("*", "*") + "*"
# What the preparation state machine writes; no trigger watches it.
PREPARATIONS_PREFIX = "preparations/"
# What the package build writes; no trigger watches it.
PACKAGES_PREFIX = "packages/"
# A training run's train and validation files and the provider's output; no trigger watches it.
TRAINING_PREFIX = "training/"
# What an evaluation's Compare step writes (its report); no trigger watches it.
EVALUATIONS_PREFIX = "evaluations/"
# Jobs for the sandbox function and its outputs: no trigger watches it, and nothing there is kept.
__all__ = ["SANDBOX_PREFIX"]

DATA_BUCKET_ID = "DataBucket"
# The console PUTs a bundle to the presigned URL the API answers, with the stamp's signed headers. The URL's
# signature is what authorizes the write, so any origin may send it: naming the console's would make the
# bucket depend on the distribution, whose security headers already name the bucket.
UPLOAD_CORS = s3.CorsRule(
    allowed_methods=[s3.HttpMethods.PUT],
    allowed_origins=["*"],
    allowed_headers=["content-type", *(f"x-amz-meta-{key}" for key in (PUBLISHER_KEY, PUBLISHER_GROUP_KEY))],
    max_age=600,
)

_STRING = dynamodb.AttributeType.STRING

# Global secondary indexes: name -> (partition key, sort key); newest-first listings sort on created_at.
RUNS_INDEXES = {"by_environment": ("environment_id", "created_at"), "by_status": ("status", "created_at")}
DATASETS_INDEXES = {"by_kind": ("kind", "created_at")}
PACKAGES_INDEXES = {"by_preparation": ("preparation_id", "created_at")}
CONNECTIONS_INDEXES = {"by_owner": ("owner", "created_at")}
PREPARATIONS_INDEXES = {"by_owner": ("owner", "created_at")}
TRAINING_RUNS_INDEXES = {
    "by_owner": ("owner", "created_at"),
    "by_preparation": ("preparation_id", "created_at"),
}
# Sorted on authorized_at, which only evaluations carry: the grants beside them stay out of the index.
EVALUATIONS_INDEXES = {"by_training_run": ("training_run_id", "authorized_at")}


def private_bucket(
    scope: Construct,
    construct_id: str,
    *,
    object_ownership: s3.ObjectOwnership = s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    **options: Any,
) -> s3.Bucket:
    """A bucket nothing public reaches: public access blocked, encrypted, TLS-only, ACLs off by default.

    SSE-S3 rather than KMS: S3 delivers server access logs only to SSE-S3 encrypted buckets.
    """
    return s3.Bucket(
        scope,
        construct_id,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        object_ownership=object_ownership,
        **options,
    )


def access_logs_bucket(scope: Construct, construct_id: str) -> s3.Bucket:
    """A bucket that receives other buckets' server access logs, kept a year; `construct_id` is also its
    logical id."""
    bucket = private_bucket(
        scope,
        construct_id,
        lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365))],
        removal_policy=RemovalPolicy.RETAIN,
    )
    set_logical_id(bucket, construct_id)
    return bucket


def _table(
    scope: Construct,
    construct_id: str,
    *,
    partition_key: str,
    sort_key: str | None = None,
    time_to_live_attribute: str | None = None,
) -> dynamodb.Table:
    table = dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=partition_key, type=_STRING),
        sort_key=dynamodb.Attribute(name=sort_key, type=_STRING) if sort_key else None,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        time_to_live_attribute=time_to_live_attribute,
        removal_policy=RemovalPolicy.RETAIN,
        deletion_protection=True,
    )
    # Stable logical ids: the local cloud and readers of the template find tables by these names.
    set_logical_id(table, construct_id)
    return table


def _add_indexes(table: dynamodb.Table, indexes: dict[str, tuple[str, str]]) -> None:
    for name, (partition_key, sort_key) in indexes.items():
        table.add_global_secondary_index(
            index_name=name,
            partition_key=dynamodb.Attribute(name=partition_key, type=_STRING),
            sort_key=dynamodb.Attribute(name=sort_key, type=_STRING),
            projection_type=dynamodb.ProjectionType.ALL,
        )


@dataclass(frozen=True)
class StoredData:
    """The data bucket and the tables as the functions use them, from whichever stack they are in.

    A table imported from another stack is known by its ARN, which grants name; ``table_names`` gives
    each table's name (by field name) as its own stack declares it, for the functions' environment.
    """

    bucket: s3.IBucket
    table_names: Mapping[str, str]
    environments_table: dynamodb.ITable
    runs_table: dynamodb.ITable
    datasets_table: dynamodb.ITable
    packages_table: dynamodb.ITable
    idempotency_table: dynamodb.ITable
    connections_table: dynamodb.ITable
    preparations_table: dynamodb.ITable
    training_runs_table: dynamodb.ITable
    evaluations_table: dynamodb.ITable


TABLE_FIELDS = tuple(field.name for field in fields(StoredData) if field.name.endswith("_table"))


class Storage(Construct):
    """The data bucket and the tables: user data lives here and survives deleting the stack."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.logs_bucket = access_logs_bucket(self, "AccessLogsBucket")

        self.bucket = private_bucket(
            self,
            DATA_BUCKET_ID,
            versioned=True,
            cors=[UPLOAD_CORS],
            server_access_logs_bucket=self.logs_bucket,
            server_access_logs_prefix="data-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-noncurrent-versions",
                    noncurrent_version_expiration=Duration.days(90),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                ),
                s3.LifecycleRule(
                    id="expire-sandbox-jobs",
                    prefix=SANDBOX_PREFIX,
                    expiration=Duration.days(1),
                    noncurrent_version_expiration=Duration.days(1),
                ),
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        set_logical_id(self.bucket, DATA_BUCKET_ID)

        self.environments_table = _table(
            self, "EnvironmentsTable", partition_key="environment_id", sort_key="version"
        )
        self.runs_table = _table(self, "RunsTable", partition_key="run_id")
        _add_indexes(self.runs_table, RUNS_INDEXES)
        self.datasets_table = _table(self, "DatasetsTable", partition_key="dataset_id")
        _add_indexes(self.datasets_table, DATASETS_INDEXES)
        self.packages_table = _table(self, "PackagesTable", partition_key="package_id")
        _add_indexes(self.packages_table, PACKAGES_INDEXES)
        self.idempotency_table = _table(
            self, "IdempotencyTable", partition_key="id", time_to_live_attribute="expiration"
        )
        # Provider connections: where to reach a provider and what it accepts; keys stay in Secrets Manager.
        self.connections_table = _table(self, "ConnectionsTable", partition_key="connection_id")
        _add_indexes(self.connections_table, CONNECTIONS_INDEXES)
        self.preparations_table = _table(self, "PreparationsTable", partition_key="preparation_id")
        _add_indexes(self.preparations_table, PREPARATIONS_INDEXES)
        # Training runs: one provider job each, its status timeline and the model it produced.
        self.training_runs_table = _table(self, "TrainingRunsTable", partition_key="training_run_id")
        _add_indexes(self.training_runs_table, TRAINING_RUNS_INDEXES)
        # Evaluations and, under keys of their own, the grants that authorize them.
        self.evaluations_table = _table(self, "EvaluationsTable", partition_key="evaluation_id")
        _add_indexes(self.evaluations_table, EVALUATIONS_INDEXES)

    @property
    def tables(self) -> dict[str, dynamodb.Table]:
        """Each table by its StoredData field name."""
        return {name: getattr(self, name) for name in TABLE_FIELDS}
