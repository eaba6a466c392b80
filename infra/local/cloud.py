"""The application on moto: resources created from the synthesized CDK template, handlers in-process.

Nothing here repeats a name or a setting of the CDK app: every resource, environment variable,
notification and the state machine definition come from the template (see ``template.py``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import os
import secrets
import time
import urllib.request
import zipfile
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal

from infra.local.api_server import ApiServer
from infra.local.auth import TokenVerifier
from infra.local.lambda_hook import Handler, LambdaHook
from infra.local.template import (
    ACCOUNT_ID,
    SERVICE_NAME_VARIABLE,
    Route,
    Template,
    lazy_handler,
    service_name,
)

Mode = Literal["in-process", "server"]

MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
# moto accepts any credentials; fixed fake ones keep a real profile from ever being used.
LOCAL_KEY = "testing"
LOCAL_ROLE_NAME = "benchgen-local-execution"
# Variables that legitimately differ per function; in-process they cannot share one os.environ value.
PER_FUNCTION_VARIABLES = frozenset({SERVICE_NAME_VARIABLE})
TABLE_TYPES = ("AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable")


class LocalCloud:
    """Context manager that stands the synthesized stack up on moto.

    ``template``: a synthesized template dict (tests share one: synthesis takes seconds); when omitted,
    ``infra.synth.synth_template(context)`` is called. ``handlers`` maps a function folder name
    (POWERTOOLS_SERVICE_NAME) to a callable, replacing the default lazy import of
    ``functions.<name>.handler``.
    """

    def __init__(
        self,
        template: dict[str, Any] | None = None,
        *,
        mode: Mode = "in-process",
        port: int = 5000,
        region: str = "us-east-1",
        handlers: Mapping[str, Handler] | None = None,
        name_prefix: str = "benchgen-local",
        context: dict[str, Any] | None = None,
    ) -> None:
        self.mode: Mode = mode
        self.port = port
        self.region = region
        self.name_prefix = name_prefix
        self._template_body = template
        self._context = context
        self._handler_overrides = dict(handlers or {})
        self.template = Template({}, region=region)
        self.hook = LambdaHook(region=region)
        self.endpoint_url: str | None = f"http://127.0.0.1:{port}" if mode == "server" else None
        self.bucket = ""
        self.buckets: dict[str, str] = {}
        self.table_names: dict[str, str] = {}
        self.functions: dict[str, str] = {}
        self.state_machine_arns: dict[str, str] = {}
        self.state_machine_arn = ""
        self.bus_name = "default"
        self.user_pool_id = ""
        self.client_id = ""
        self.environment: dict[str, str] = {}
        self.conflicting_variables: list[str] = []
        self.timings: dict[str, float] = {}
        self._client_secret: str | None = None
        self._client_auth_flows: list[str] = []
        self._saved_environ: dict[str, str | None] = {}
        self._mock: Any = None
        self._server: Any = None
        self._clients: dict[str, Any] = {}

    # lifecycle

    def __enter__(self) -> LocalCloud:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        started = time.monotonic()
        body = self._template_body
        if body is None:
            from infra.synth import synth_template

            body = synth_template(self._context)
        self.timings = {"synthesis_s": time.monotonic() - started}
        self.template = Template(body, region=self.region)
        started = time.monotonic()
        self._set_environ(self._base_environ())
        try:
            self._start_moto()
            _forget_library_clients()
            self.hook.__enter__()
            self._create_resources()
        except BaseException:
            self.stop()
            raise
        self.timings["resources_s"] = time.monotonic() - started

    def stop(self, drain_timeout: float = 30.0) -> list[str]:
        """Let running invocations and executions finish, then stop moto and restore the environment.

        Returns what was still running after ``drain_timeout`` (abandoned)."""
        abandoned: list[str] = []
        try:
            # Only a fully started cloud has every state machine to ask about.
            if "resources_s" in self.timings and (self._mock is not None or self._server is not None):
                abandoned = self._quiesce(drain_timeout)
        finally:
            if self.hook.active:
                self.hook.__exit__(None, None, None)
            if self._server is not None:
                self._server.stop()
                self._server = None
            if self._mock is not None:
                self._mock.stop()
                self._mock = None
            self._clients.clear()
            _forget_library_clients()
            self._restore_environ()
        return abandoned

    def _start_moto(self) -> None:
        if self.mode == "in-process":
            from moto import mock_aws

            self._mock = mock_aws(config=MOTO_CONFIG)  # type: ignore[call-overload]
            self._mock.start()
            return
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port)
        self._server.start()
        # The executing Step Functions backend must be chosen before any state machine exists.
        url = f"{self.endpoint_url}/moto-api/config"
        body = json.dumps(MOTO_CONFIG).encode()
        request = urllib.request.Request(url, data=body, method="POST")  # noqa: S310 (loopback http URL)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (same URL)
            response.read()

    def _base_environ(self) -> dict[str, str]:
        values = {
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": LOCAL_KEY,
            "AWS_SECRET_ACCESS_KEY": LOCAL_KEY,
            "AWS_SESSION_TOKEN": LOCAL_KEY,
        }
        if self.mode == "server":
            # The state machine interpreter calls the other services at localhost:$MOTO_PORT, and the
            # in-process handlers must reach the server rather than AWS.
            values["MOTO_PORT"] = str(self.port)
            values["AWS_ENDPOINT_URL"] = str(self.endpoint_url)
        return values

    def _set_environ(self, values: Mapping[str, str]) -> None:
        for name, value in values.items():
            if name not in self._saved_environ:
                self._saved_environ[name] = os.environ.get(name)
            os.environ[name] = value

    def _restore_environ(self) -> None:
        for name, value in self._saved_environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_environ.clear()

    def client(self, service: str) -> Any:
        """A boto3 client bound to this local cloud (created after moto is active)."""
        if service not in self._clients:
            import boto3

            self._clients[service] = boto3.client(
                service,
                region_name=self.region,
                endpoint_url=self.endpoint_url,
                aws_access_key_id=LOCAL_KEY,
                aws_secret_access_key=LOCAL_KEY,
            )
        return self._clients[service]

    # resources

    def _create_resources(self) -> None:
        self._plan_names()
        self._create_user_pools()
        self._create_queues()
        self._create_secrets()
        self._create_buckets()
        self._create_tables()
        self._create_buses()
        self._create_functions()
        self._create_state_machines()
        self._create_bucket_notifications()

    def _name(self, logical_id: str, limit: int) -> str:
        return f"{self.name_prefix}-{logical_id}"[:limit]

    def _arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{ACCOUNT_ID}:{resource}"

    def _plan_names(self) -> None:
        """Record every name and ARN before creating anything: functions and the state machine refer
        to each other (STATE_MACHINE_ARN on one side, the function ARN in the definition on the other)."""
        tpl = self.template
        for lid in tpl.of_type("AWS::S3::Bucket"):
            props = tpl.properties(lid)
            name = (
                tpl.resolve_str(props["BucketName"]) if "BucketName" in props else self._name(lid, 63).lower()
            )
            tpl.record(
                lid,
                name,
                Arn=f"arn:aws:s3:::{name}",
                DomainName=f"{name}.s3.amazonaws.com",
                RegionalDomainName=f"{name}.s3.{self.region}.amazonaws.com",
            )
            self.buckets[lid] = name
        for resource_type in TABLE_TYPES:
            for lid in tpl.of_type(resource_type):
                props = tpl.properties(lid)
                name = tpl.resolve_str(props["TableName"]) if "TableName" in props else self._name(lid, 255)
                arn = self._arn("dynamodb", f"table/{name}")
                tpl.record(lid, name, Arn=arn, StreamArn=f"{arn}/stream/local")
                self.table_names[lid] = name
        for lid in tpl.of_type("AWS::Events::EventBus"):
            name = tpl.resolve_str(tpl.properties(lid)["Name"])
            tpl.record(lid, name, Arn=self._arn("events", f"event-bus/{name}"), Name=name)
        for lid, resource in tpl.of_type("AWS::Lambda::Function").items():
            if service_name(resource) is None:
                continue
            props = tpl.properties(lid)
            name = tpl.resolve_str(props["FunctionName"]) if "FunctionName" in props else self._name(lid, 64)
            tpl.record(lid, name, Arn=self._arn("lambda", f"function:{name}"))
            self.functions[lid] = name
        for lid in tpl.of_type("AWS::StepFunctions::StateMachine"):
            props = tpl.properties(lid)
            name = (
                tpl.resolve_str(props["StateMachineName"])
                if "StateMachineName" in props
                else self._name(lid, 80)
            )
            arn = self._arn("states", f"stateMachine:{name}")
            tpl.record(lid, arn, Arn=arn, Name=name)
            self.state_machine_arns[lid] = arn

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
            name = tpl.resolve_str(props["UserPoolName"]) if "UserPoolName" in props else self._name(lid, 128)
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
            self.user_pool_id = self.user_pool_id or pool["Id"]
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
            if pool_id == self.user_pool_id and not self.client_id:
                self.client_id = created["ClientId"]
                self._client_secret = created.get("ClientSecret")
                self._client_auth_flows = list(created.get("ExplicitAuthFlows", []))

    def _create_queues(self) -> None:
        tpl = self.template
        for lid in tpl.of_type("AWS::SQS::Queue"):
            props = tpl.properties(lid)
            fifo = bool(props.get("FifoQueue", False))
            default = self._name(lid, 75 if fifo else 80) + (".fifo" if fifo else "")
            name = tpl.resolve_str(props["QueueName"]) if "QueueName" in props else default
            attributes = {"FifoQueue": "true"} if fifo else {}
            url = self.client("sqs").create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            tpl.record(lid, url, Arn=self._arn("sqs", name), QueueName=name, QueueUrl=url)

    def _create_secrets(self) -> None:
        tpl = self.template
        for lid in tpl.of_type("AWS::SecretsManager::Secret"):
            props = tpl.properties(lid)
            name = tpl.resolve_str(props["Name"]) if "Name" in props else self._name(lid, 512)
            # A generated secret gets a random placeholder; real provider keys are put in by the operator.
            value = (
                tpl.resolve(props["SecretString"]) if "SecretString" in props else secrets.token_urlsafe(24)
            )
            arn = self.client("secretsmanager").create_secret(Name=name, SecretString=str(value))["ARN"]
            tpl.record(lid, arn, Id=arn)

    def _create_buckets(self) -> None:
        s3 = self.client("s3")
        for lid, name in self.buckets.items():
            if self.region == "us-east-1":
                s3.create_bucket(Bucket=name)
            else:
                s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": self.region})
            status = self.template.properties(lid).get("VersioningConfiguration", {}).get("Status")
            if status:
                s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})
        self.bucket = self._data_bucket()

    def _data_bucket(self) -> str:
        """The bucket whose uploads drive the flow: the one CDK's notification resource targets."""
        for resource in self.template.of_type("Custom::S3BucketNotifications").values():
            return self.template.resolve_str(resource["Properties"]["BucketName"])
        data = [name for lid, name in self.buckets.items() if lid.lower().startswith("data")]
        candidates = data or list(self.buckets.values())
        return candidates[0] if candidates else ""

    def _create_tables(self) -> None:
        tpl = self.template
        dynamodb = self.client("dynamodb")
        for lid, name in self.table_names.items():
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
            self.bus_name = name

    def _create_functions(self) -> None:
        tpl = self.template
        role_arn = self._execution_role()
        code = _placeholder_zip()
        shared: dict[str, str] = {}
        conflicts: set[str] = set()
        for lid, name in self.functions.items():
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
            handler = self._handler_overrides.get(folder) or lazy_handler(folder)
            self.hook.register(name, handler)
            for key, value in variables.items():
                if key in PER_FUNCTION_VARIABLES:
                    continue
                if key in shared and shared[key] != value:
                    conflicts.add(key)
                shared.setdefault(key, value)
        self.conflicting_variables = sorted(conflicts)
        self.environment = {key: value for key, value in shared.items() if key not in conflicts}
        self._set_environ(self.environment)

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

    def _create_state_machines(self) -> None:
        tpl = self.template
        role_arn = f"arn:aws:iam::{ACCOUNT_ID}:role/{LOCAL_ROLE_NAME}"
        for lid in self.state_machine_arns:
            props = tpl.properties(lid)
            if "DefinitionString" in props:
                definition = tpl.resolve_str(props["DefinitionString"])
            else:
                definition = json.dumps(tpl.resolve(props["Definition"]))
            for key, value in tpl.resolve(props.get("DefinitionSubstitutions", {})).items():
                definition = definition.replace("${" + key + "}", str(value))
            self.client("stepfunctions").create_state_machine(
                name=tpl.physical[lid].attributes["Name"],
                definition=definition,
                roleArn=role_arn,
                type=props.get("StateMachineType", "STANDARD"),
            )
        self.state_machine_arn = next(iter(self.state_machine_arns.values()), "")

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

    # operations

    def create_user(self, username: str, password: str) -> str:
        """Create a confirmed user in the pool and return an ID token for it."""
        cognito = self.client("cognito-idp")
        attributes = [{"Name": "email", "Value": username}] if "@" in username else []
        if attributes:
            attributes.append({"Name": "email_verified", "Value": "true"})
        cognito.admin_create_user(
            UserPoolId=self.user_pool_id,
            Username=username,
            TemporaryPassword=password,
            UserAttributes=attributes,
            MessageAction="SUPPRESS",
        )
        cognito.admin_set_user_password(
            UserPoolId=self.user_pool_id, Username=username, Password=password, Permanent=True
        )
        parameters = {"USERNAME": username, "PASSWORD": password}
        if self._client_secret:
            digest = hmac.new(
                self._client_secret.encode(), (username + self.client_id).encode(), hashlib.sha256
            ).digest()
            parameters["SECRET_HASH"] = base64.b64encode(digest).decode()
        if "ALLOW_ADMIN_USER_PASSWORD_AUTH" in self._client_auth_flows:
            result = cognito.admin_initiate_auth(
                UserPoolId=self.user_pool_id,
                ClientId=self.client_id,
                AuthFlow="ADMIN_USER_PASSWORD_AUTH",
                AuthParameters=parameters,
            )
        else:
            result = cognito.initiate_auth(
                ClientId=self.client_id, AuthFlow="USER_PASSWORD_AUTH", AuthParameters=parameters
            )
        return str(result["AuthenticationResult"]["IdToken"])

    def serve_api(self, port: int = 0, *, access_log: bool = True) -> ApiServer:
        """The REST API on loopback, behind the user pool's token checks, calling the real API function."""
        verifier = TokenVerifier(
            user_pool_id=self.user_pool_id, client_id=self.client_id, jwks=self.jwks(), region=self.region
        )
        return ApiServer(
            self.routes(),
            self._handler_overrides.get("api") or lazy_handler("api"),
            verifier,
            port=port,
            stage=self.template.stage_name(),
            region=self.region,
            access_log=access_log,
        )

    def jwks(self) -> dict[str, Any]:
        """The public signing keys moto's Cognito signs tokens with (the pool's .well-known/jwks.json)."""
        from moto.utilities.utils import load_resource

        keys: dict[str, Any] = load_resource("cognitoidp/resources/jwks-public.json")
        return keys

    def routes(self) -> list[Route]:
        return self.template.api_routes()

    def execution_arn(self, name: str, state_machine_arn: str | None = None) -> str:
        machine = state_machine_arn or self.state_machine_arn
        return machine.replace(":stateMachine:", ":execution:") + f":{name}"

    def wait_for_execution(
        self, name: str, timeout: float = 30.0, *, state_machine_arn: str | None = None
    ) -> dict[str, Any]:
        """Poll the named execution until it exists and has left RUNNING; return describe_execution's answer.

        It may not exist yet: the handler that starts it runs asynchronously after the upload."""
        arn = self.execution_arn(name, state_machine_arn)
        deadline = time.monotonic() + timeout
        sfn = self.client("stepfunctions")
        while True:
            try:
                described: dict[str, Any] = sfn.describe_execution(executionArn=arn)
            except sfn.exceptions.ExecutionDoesNotExist:
                described = {"status": "RUNNING"}
            if described["status"] != "RUNNING":
                return described
            if time.monotonic() > deadline:
                raise TimeoutError(f"execution {name} still RUNNING after {timeout:.0f} s")
            time.sleep(0.05)

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until no asynchronous invocation and no execution is running.

        Each can start the other (an upload triggers a handler that starts an execution whose task may
        write another object), so both are waited for until a pass finds them idle together.
        """
        leftover = self._quiesce(timeout)
        if leftover:
            raise TimeoutError(f"still running after {timeout:.0f} s: {', '.join(leftover)}")

    def _quiesce(self, timeout: float) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            if not self.hook.wait_idle(max(0.0, deadline - time.monotonic())):
                return ["asynchronous Lambda invocations"]
            running = self.drain(max(0.0, deadline - time.monotonic()))
            if running or not self.hook.busy:
                return running

    def drain(self, timeout: float = 30.0) -> list[str]:
        """Wait for running executions to finish (their threads call moto after the caller returns).

        Returns the ARNs still running when ``timeout`` ran out."""
        deadline = time.monotonic() + timeout
        running: list[str] = []
        while True:
            running = [
                execution["executionArn"]
                for machine in self.state_machine_arns.values()
                for execution in self.client("stepfunctions").list_executions(
                    stateMachineArn=machine, statusFilter="RUNNING"
                )["executions"]
            ]
            if not running or time.monotonic() > deadline:
                return running
            time.sleep(0.05)


def _forget_library_clients() -> None:
    # The handlers' cached settings and clients must be made against this cloud, not a previous one
    # (or real AWS).
    from benchgen.aws import wiring

    wiring.reset()


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
