"""The data stack: the data bucket, the tables, the event bus and the user pool.

Its buckets, tables and user pool are kept when the stack is deleted, and the stack itself is protected
from termination. The other stacks reach it only through the exports below, whose names are stable:
CloudFormation refuses to change or remove an export another stack imports, so an export named after a
construct's hash (CDK's default for a direct reference) would pin the data stack to whatever its consumers
once used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput, Fn, Stack
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.constructs.events import Events
from infra.constructs.storage import Storage, StoredData
from infra.constructs.users import Users
from infra.stacks import DATA_STACK

BUCKET_NAME = "DataBucketName"
BUCKET_ARN = "DataBucketArn"
BUCKET_DOMAIN = "DataBucketDomainName"
BUCKET_REGIONAL_DOMAIN = "DataBucketRegionalDomainName"
BUS_NAME = "EventBusName"
BUS_ARN = "EventBusArn"
USER_POOL_ID = "UserPoolId"
USER_POOL_ARN = "UserPoolArn"
USER_POOL_CLIENT_ID = "UserPoolClientId"
CONSOLE_CLIENT_ID = "ConsoleUserPoolClientId"


def export_name(key: str) -> str:
    """The name another stack imports the data stack's output `key` by."""
    return f"{DATA_STACK}-{key}"


def _imported(key: str) -> str:
    return Fn.import_value(export_name(key))


def _table_key(field: str, attribute: str) -> str:
    """``runs_table``, ``Arn`` -> ``RunsTableArn``."""
    return "".join(part.title() for part in field.split("_")) + attribute


@dataclass(frozen=True)
class DataImports:
    """The data stack's resources as another stack sees them, through its imports."""

    stored: StoredData
    bus: events.IEventBus
    user_pool: cognito.IUserPool
    user_pool_id: str
    console_client_id: str


class DataStack(Stack):
    def __init__(self, scope: Construct, construct_id: str = DATA_STACK, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, termination_protection=True, **kwargs)
        self.storage = Storage(self, "Storage")
        self.events = Events(self, "Events")
        self.users = Users(self, "Users")
        # What an operator reads after `cdk deploy` (the bucket to upload to, the pool and the command
        # line's client to sign in with) doubles as what the other stacks import.
        self._export(BUCKET_NAME, self.storage.bucket.bucket_name, "Upload bundles and submissions here")
        self._export(BUCKET_ARN, self.storage.bucket.bucket_arn)
        # The console's page may frame and fetch the bucket's presigned URLs, on either of its hosts.
        self._export(BUCKET_DOMAIN, self.storage.bucket.bucket_domain_name)
        self._export(BUCKET_REGIONAL_DOMAIN, self.storage.bucket.bucket_regional_domain_name)
        for field, table in self.storage.tables.items():
            self._export(_table_key(field, "Name"), table.table_name)
            self._export(_table_key(field, "Arn"), table.table_arn)
        self._export(BUS_NAME, self.events.bus.event_bus_name)
        self._export(BUS_ARN, self.events.bus.event_bus_arn)
        self._export(USER_POOL_ID, self.users.user_pool.user_pool_id, "Create users here")
        self._export(USER_POOL_ARN, self.users.user_pool.user_pool_arn)
        self._export(
            USER_POOL_CLIENT_ID, self.users.user_pool_client.user_pool_client_id, "The command line's client"
        )
        self._export(CONSOLE_CLIENT_ID, self.users.console_client.user_pool_client_id)

    def _export(self, key: str, value: str, description: str | None = None) -> None:
        CfnOutput(self, key, value=value, export_name=export_name(key), description=description)

    def imports(self, scope: Construct) -> DataImports:
        """This stack's resources, imported into `scope`'s stack by export name."""
        bucket = s3.Bucket.from_bucket_attributes(
            scope,
            "DataBucket",
            bucket_arn=_imported(BUCKET_ARN),
            bucket_name=_imported(BUCKET_NAME),
            bucket_domain_name=_imported(BUCKET_DOMAIN),
            bucket_regional_domain_name=_imported(BUCKET_REGIONAL_DOMAIN),
        )
        # By ARN, which grants name; the functions are told each table's name from its own export.
        tables = {
            field: dynamodb.Table.from_table_arn(
                scope, _table_key(field, ""), _imported(_table_key(field, "Arn"))
            )
            for field in self.storage.tables
        }
        bus = events.EventBus.from_event_bus_attributes(
            scope,
            "EventBus",
            event_bus_arn=_imported(BUS_ARN),
            event_bus_name=_imported(BUS_NAME),
            # The bus's resource policy: the application sets none.
            event_bus_policy="",
        )
        user_pool = cognito.UserPool.from_user_pool_arn(scope, "UserPool", _imported(USER_POOL_ARN))
        names = {field: _imported(_table_key(field, "Name")) for field in tables}
        return DataImports(
            stored=StoredData(bucket=bucket, table_names=names, **tables),
            bus=bus,
            user_pool=user_pool,
            user_pool_id=_imported(USER_POOL_ID),
            console_client_id=_imported(CONSOLE_CLIENT_ID),
        )
