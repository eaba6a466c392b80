"""Every resource of the synthesized CDK template, created on moto.

Nothing here repeats a name or a setting of the CDK app: every resource, environment variable,
notification and the state machine definition come from the template (see ``stack_template.py``).
Names are planned first, since functions and the state machine refer to each other; then each kind
of resource is created in an order where what a resource refers to already exists.
"""

from __future__ import annotations

import io
import json
import secrets
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from localcloud.lambda_async import DEFAULT_RETRY_ATTEMPTS, AsyncConfig, QueueConsumer
from localcloud.lambda_hook import LambdaHook
from localcloud.lambda_runtime import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, Handler
from localcloud.stack_template import (
    ACCOUNT_ID,
    SERVICE_NAME_VARIABLE,
    StackTemplate,
    lazy_handler,
    service_name,
)

LOCAL_ROLE_NAME = "benchgen-local-execution"
# Variables that legitimately differ per function; in-process they cannot share one os.environ value.
PER_FUNCTION_VARIABLES = frozenset({SERVICE_NAME_VARIABLE})
TABLE_TYPES = ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable")


@dataclass
class Resources:
    """What provisioning made, keyed by logical id where there can be several of a kind."""

    bucket: str = ""
    buckets: dict[str, str] = field(default_factory=dict)
    table_names: dict[str, str] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)
    state_machine_arns: dict[str, str] = field(default_factory=dict)
    state_machine_arn: str = ""
    bus_name: str = "default"
    user_pool_id: str = ""
    client_id: str = ""
    client_secret: str | None = None
    client_auth_flows: list[str] = field(default_factory=list)
    #: The variables every function shares, for the in-process handlers' os.environ.
    environment: dict[str, str] = field(default_factory=dict)
    #: Variables whose value differs between functions, so none of them can go in os.environ.
    conflicting_variables: list[str] = field(default_factory=list)


class Provisioner:
    """Creates the template's resources through ``client`` (a service name -> boto3 client factory).

    Each function is registered with ``hook``, running ``handlers[folder]`` when given, else the lazy
    import of ``functions.<folder>.handler``. The template records every physical id it makes, so
    later references resolve to them.
    """

    def __init__(
        self,
        template: StackTemplate,
        client: Callable[[str], Any],
        *,
        region: str,
        name_prefix: str,
        hook: LambdaHook,
        handlers: Mapping[str, Handler],
    ) -> None:
        self.template = template
        self.client = client
        self.region = region
        self.name_prefix = name_prefix
        self.hook = hook
        self.handlers = handlers
        self.resources = Resources()
        self._queue_urls: dict[str, str] = {}

    def provision(self) -> Resources:
        self._plan_names()
        self._create_user_pools()
        self._create_queues()
        self._create_secrets()
        self._create_buckets()
        self._create_tables()
        self._create_buses()
        role_arn = self._execution_role()
        self._create_functions(role_arn)
        self._configure_asynchronous_invocations()
        self._create_state_machines(role_arn)
        self._create_bucket_notifications()
        return self.resources

    def _name(self, logical_id: str, limit: int) -> str:
        return f"{self.name_prefix}-{logical_id}"[:limit]

    def _physical_name(self, logical_id: str, name_property: str, limit: int) -> str:
        """The name the template gives the resource, else a generated one (as CloudFormation would)."""
        props = self.template.properties(logical_id)
        if name_property in props:
            return self.template.resolve_str(props[name_property])
        return self._name(logical_id, limit)

    def _arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{ACCOUNT_ID}:{resource}"

    def _plan_names(self) -> None:
        """Record every name and ARN before creating anything: functions and the state machine refer
        to each other (STATE_MACHINE_ARN on one side, the function ARN in the definition on the other)."""
        tpl = self.template
        for lid in tpl.of_type("AWS::S3::Bucket"):
            # S3 names are lower case; a name generated from a logical id is not.
            name = self._physical_name(lid, "BucketName", 63).lower()
            tpl.record(
                lid,
                name,
                Arn=f"arn:aws:s3:::{name}",
                DomainName=f"{name}.s3.amazonaws.com",
                RegionalDomainName=f"{name}.s3.{self.region}.amazonaws.com",
            )
            self.resources.buckets[lid] = name
        for resource_type in TABLE_TYPES:
            for lid in tpl.of_type(resource_type):
                name = self._physical_name(lid, "TableName", 255)
                arn = self._arn("dynamodb", f"table/{name}")
                tpl.record(lid, name, Arn=arn, StreamArn=f"{arn}/stream/local")
                self.resources.table_names[lid] = name
        for lid in tpl.of_type("AWS::Events::EventBus"):
            name = tpl.resolve_str(tpl.properties(lid)["Name"])
            tpl.record(lid, name, Arn=self._arn("events", f"event-bus/{name}"), Name=name)
        for lid, resource in tpl.of_type("AWS::Lambda::Function").items():
            if service_name(resource) is None:
                continue
            name = self._physical_name(lid, "FunctionName", 64)
            tpl.record(lid, name, Arn=self._arn("lambda", f"function:{name}"))
            self.resources.functions[lid] = name
        for lid in tpl.of_type("AWS::CloudFront::Distribution"):
            # Nothing serves it here (the local console is served beside the API): a reserved name that no
            # browser is ever on, so the API allows no cross-origin call from it.
            domain = f"{self._name(lid, 63).lower()}.cloudfront.invalid"
            tpl.record(lid, domain, DomainName=domain)
        for lid in tpl.of_type("AWS::IAM::Role"):
            # Named only, never created: the handlers run with the local credentials, and a role ARN a
            # function is handed (the one Bedrock assumes for batch jobs) only travels in requests.
            name = self._physical_name(lid, "RoleName", 64)
            tpl.record(lid, name, Arn=f"arn:aws:iam::{ACCOUNT_ID}:role/{name}")
        for lid in tpl.of_type("AWS::StepFunctions::StateMachine"):
            name = self._physical_name(lid, "StateMachineName", 80)
            arn = self._arn("states", f"stateMachine:{name}")
            tpl.record(lid, arn, Arn=arn, Name=name)
            self.resources.state_machine_arns[lid] = arn

    def _create_user_pools(self) -> None:
        tpl = self.template
        cognito = self.client("cognito-idp")
        kept = (
            "Policies",
            "AutoVerifiedAttributes",
            "AliasAttributes",
            "UsernameAttributes",
            "MfaConfiguration",
            "AdminCreateUserConfig",
            "Schema",
            "UsernameConfiguration",
            "AccountRecoverySetting",
        )
        for lid in tpl.of_type("AWS::Cognito::UserPool"):
            props = tpl.properties(lid)
            name = self._physical_name(lid, "UserPoolName", 128)
            arguments = {key: tpl.resolve(props[key]) for key in kept if key in props}
            pool = cognito.create_user_pool(PoolName=name, **arguments)["UserPool"]
            tpl.record(
                lid,
                pool["Id"],
                Arn=pool["Arn"],
                ProviderName=f"cognito-idp.{self.region}.amazonaws.com/{pool['Id']}",
                ProviderURL=f"https://cognito-idp.{self.region}.amazonaws.com/{pool['Id']}",
                UserPoolId=pool["Id"],
            )
            self.resources.user_pool_id = self.resources.user_pool_id or pool["Id"]
        for lid in tpl.of_type("AWS::Cognito::UserPoolClient"):
            props = tpl.properties(lid)
            pool_id = tpl.resolve_str(props["UserPoolId"])
            created = cognito.create_user_pool_client(
                UserPoolId=pool_id,
                ClientName=tpl.resolve_str(props.get("ClientName", lid)),
                GenerateSecret=bool(props.get("GenerateSecret", False)),
                ExplicitAuthFlows=tpl.resolve(props.get("ExplicitAuthFlows", ["ALLOW_USER_PASSWORD_AUTH"])),
            )["UserPoolClient"]
            tpl.record(lid, created["ClientId"], ClientSecret=created.get("ClientSecret", ""))
            if pool_id == self.resources.user_pool_id and not self.resources.client_id:
                self.resources.client_id = created["ClientId"]
                self.resources.client_secret = created.get("ClientSecret")
                self.resources.client_auth_flows = list(created.get("ExplicitAuthFlows", []))
        for lid in tpl.of_type("AWS::Cognito::UserPoolGroup"):
            props = tpl.properties(lid)
            group = tpl.resolve_str(props["GroupName"])
            extra = {"Description": tpl.resolve_str(props["Description"])} if "Description" in props else {}
            cognito.create_group(GroupName=group, UserPoolId=tpl.resolve_str(props["UserPoolId"]), **extra)
            tpl.record(lid, group)

    def _create_queues(self) -> None:
        tpl = self.template
        for lid in tpl.of_type("AWS::SQS::Queue"):
            props = tpl.properties(lid)
            fifo = bool(props.get("FifoQueue", False))
            default = self._name(lid, 75 if fifo else 80) + (".fifo" if fifo else "")
            name = tpl.resolve_str(props["QueueName"]) if "QueueName" in props else default
            attributes = {"FifoQueue": "true"} if fifo else {}
            url = self.client("sqs").create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            arn = self._arn("sqs", name)
            tpl.record(lid, url, Arn=arn, QueueName=name, QueueUrl=url)
            self._queue_urls[arn] = url

    def _create_secrets(self) -> None:
        tpl = self.template
        for lid in tpl.of_type("AWS::SecretsManager::Secret"):
            props = tpl.properties(lid)
            name = self._physical_name(lid, "Name", 512)
            # A generated secret gets a random placeholder; real provider keys are put in by the operator.
            value = (
                tpl.resolve(props["SecretString"]) if "SecretString" in props else secrets.token_urlsafe(24)
            )
            arn = self.client("secretsmanager").create_secret(Name=name, SecretString=str(value))["ARN"]
            tpl.record(lid, arn, Id=arn)

    def _create_buckets(self) -> None:
        s3 = self.client("s3")
        for lid, name in self.resources.buckets.items():
            if self.region == "us-east-1":
                s3.create_bucket(Bucket=name)
            else:
                s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": self.region})
            properties = self.template.properties(lid)
            status = properties.get("VersioningConfiguration", {}).get("Status")
            if status:
                s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})
            rules = properties.get("CorsConfiguration", {}).get("CorsRules")
            if rules:
                cors = {"CORSRules": [_cors_rule(rule) for rule in rules]}
                s3.put_bucket_cors(Bucket=name, CORSConfiguration=cors)
        self.resources.bucket = self._data_bucket()

    def _data_bucket(self) -> str:
        """The bucket whose uploads drive the flow: the one CDK's notification resource targets."""
        for resource in self.template.of_type("Custom::S3BucketNotifications").values():
            return self.template.resolve_str(resource["Properties"]["BucketName"])
        data = [name for lid, name in self.resources.buckets.items() if lid.lower().startswith("data")]
        candidates = data or list(self.resources.buckets.values())
        return candidates[0] if candidates else ""

    def _create_tables(self) -> None:
        tpl = self.template
        dynamodb = self.client("dynamodb")
        for lid, name in self.resources.table_names.items():
            props = tpl.resolve(tpl.properties(lid))
            on_demand = props.get("BillingMode") == "PAY_PER_REQUEST"
            throughput = props.get("ProvisionedThroughput", {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5})
            arguments: dict[str, Any] = {
                "TableName": name,
                "KeySchema": props["KeySchema"],
                "AttributeDefinitions": props["AttributeDefinitions"],
                "BillingMode": "PAY_PER_REQUEST" if on_demand else "PROVISIONED",
            }
            if not on_demand:
                arguments["ProvisionedThroughput"] = _capacity(throughput)
            for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
                if props.get(key):
                    arguments[key] = [
                        _index(index, None if on_demand or key.startswith("Local") else throughput)
                        for index in props[key]
                    ]
            stream = props.get("StreamSpecification", {}).get("StreamViewType")
            if stream:
                arguments["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream}
            dynamodb.create_table(**arguments)
            ttl = props.get("TimeToLiveSpecification")
            if ttl and ttl.get("Enabled"):
                dynamodb.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
                )

    def _create_buses(self) -> None:
        events = self.client("events")
        for lid in self.template.of_type("AWS::Events::EventBus"):
            name = self.template.physical[lid].ref
            events.create_event_bus(Name=name)
            self.resources.bus_name = name

    def _create_functions(self, role_arn: str) -> None:
        tpl = self.template
        code = _placeholder_zip()
        shared: dict[str, str] = {}
        conflicts: set[str] = set()
        for lid, name in self.resources.functions.items():
            resource = tpl.resources[lid]
            props = tpl.properties(lid)
            variables = {
                key: str(value)
                for key, value in tpl.resolve(props.get("Environment", {}).get("Variables", {})).items()
            }
            self.client("lambda").create_function(
                FunctionName=name,
                Runtime=props.get("Runtime", "python3.12"),
                Role=role_arn,
                Handler=props.get("Handler", "handler.handler"),
                Code={"ZipFile": code},
                Timeout=int(props.get("Timeout", 3)),
                MemorySize=int(props.get("MemorySize", 128)),
                Environment={"Variables": variables},
            )
            folder = str(service_name(resource))
            handler = self.handlers.get(folder) or lazy_handler(folder)
            self.hook.register(name, handler, service=folder)
            for key, value in variables.items():
                if key in PER_FUNCTION_VARIABLES:
                    continue
                if key in shared and shared[key] != value:
                    conflicts.add(key)
                shared.setdefault(key, value)
        self.resources.conflicting_variables = sorted(conflicts)
        self.resources.environment = {key: value for key, value in shared.items() if key not in conflicts}

    def _configure_asynchronous_invocations(self) -> None:
        """Retries and dead-letter queues of failed asynchronous invocations, and the functions that
        consume queues, as the template configures them (the hook plays Lambda's part in both)."""
        tpl = self.template
        self.hook.asynchronous.sqs = lambda: self.client("sqs")
        retries = {
            tpl.resolve_str(props["FunctionName"]): int(
                props.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS)
            )
            for props in (tpl.properties(lid) for lid in tpl.of_type("AWS::Lambda::EventInvokeConfig"))
        }
        by_name: dict[str, dict[str, Any]] = {}
        for lid, name in self.resources.functions.items():
            props = tpl.properties(lid)
            by_name[name] = props
            target = props.get("DeadLetterConfig", {}).get("TargetArn")
            self.hook.asynchronous.configs[name] = AsyncConfig(
                retry_attempts=retries.get(name, DEFAULT_RETRY_ATTEMPTS),
                dead_letter_queue=self._queue_urls[tpl.resolve_str(target)] if target else None,
            )
        for lid in tpl.of_type("AWS::Lambda::EventSourceMapping"):
            props = tpl.properties(lid)
            source = tpl.resolve_str(props["EventSourceArn"])
            if source not in self._queue_urls:
                continue
            function = tpl.resolve_str(props["FunctionName"])
            function_props = by_name.get(function, {})
            self.hook.asynchronous.queue_consumers[self._queue_urls[source]] = QueueConsumer(
                function_name=function,
                queue_arn=source,
                batch_size=int(props.get("BatchSize", 10)),
                reports_item_failures="ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
                memory_mb=int(function_props.get("MemorySize", DEFAULT_MEMORY_MB)),
                timeout_s=int(function_props.get("Timeout", DEFAULT_TIMEOUT_S)),
            )

    def _execution_role(self) -> str:
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
        role = self.client("iam").create_role(
            RoleName=LOCAL_ROLE_NAME, AssumeRolePolicyDocument=json.dumps(trust)
        )
        return str(role["Role"]["Arn"])

    def _create_state_machines(self, role_arn: str) -> None:
        tpl = self.template
        for lid in self.resources.state_machine_arns:
            props = tpl.properties(lid)
            self.client("stepfunctions").create_state_machine(
                name=tpl.physical[lid].attributes["Name"],
                definition=tpl.state_machine_definition(lid),
                roleArn=role_arn,
                type=props.get("StateMachineType", "STANDARD"),
            )
        self.resources.state_machine_arn = next(iter(self.resources.state_machine_arns.values()), "")

    def _create_bucket_notifications(self) -> None:
        tpl = self.template
        for resource in tpl.of_type("Custom::S3BucketNotifications").values():
            props = resource["Properties"]
            configuration = tpl.resolve(props.get("NotificationConfiguration", {}))
            for targets in configuration.values():
                for target in targets if isinstance(targets, list) else []:
                    # S3 takes "Prefix" or "prefix"; moto's matcher only knows the lower-case names.
                    for rule in target.get("Filter", {}).get("Key", {}).get("FilterRules", []):
                        rule["Name"] = str(rule["Name"]).lower()
            self.client("s3").put_bucket_notification_configuration(
                Bucket=tpl.resolve_str(props["BucketName"]), NotificationConfiguration=configuration
            )


def _capacity(throughput: Mapping[str, Any]) -> dict[str, int]:
    return {
        "ReadCapacityUnits": int(throughput["ReadCapacityUnits"]),
        "WriteCapacityUnits": int(throughput["WriteCapacityUnits"]),
    }


def _index(index: Mapping[str, Any], throughput: Mapping[str, Any] | None) -> dict[str, Any]:
    # Template indexes may carry CloudFormation-only keys (replica, on-demand settings): keep the API's.
    shaped: dict[str, Any] = {
        key: index[key] for key in ("IndexName", "KeySchema", "Projection") if key in index
    }
    if throughput is not None:
        shaped["ProvisionedThroughput"] = _capacity(index.get("ProvisionedThroughput", throughput))
    return shaped


def _placeholder_zip() -> bytes:
    # moto requires a code package; the code that runs is the in-process handler, never this.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


def _cors_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """A template's CORS rule (CloudFormation's names) as S3's PutBucketCors takes it."""
    names = {"MaxAge": "MaxAgeSeconds"}
    return {names.get(name, name): value for name, value in rule.items()}
