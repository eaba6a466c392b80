"""The application on moto: resources created from the synthesized CDK template, handlers in-process.

This module runs the cloud (moto, the process environment, clients) and operates it (users, the API,
executions); ``provision.py`` creates the template's resources in it.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import logging
import os
import time
import urllib.request
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from types import TracebackType
from typing import Any, Literal

from infra.merge import merge_stacks
from localcloud.api_server import ApiServer
from localcloud.atomic_writes import AtomicItemWrites
from localcloud.auth import TokenVerifier, moto_jwks
from localcloud.deploy_checks import check_deployable
from localcloud.function_logs import FunctionLogs
from localcloud.iam.enforcement import IamEnforcement
from localcloud.item_limits import ItemSizeLimit
from localcloud.lambda_hook import LambdaHook
from localcloud.lambda_runtime import Handler
from localcloud.object_bodies import RawPutBodies
from localcloud.presigned_urls import PresignedUrlChecks
from localcloud.provider_clock import ProviderClock
from localcloud.provision import Provisioner
from localcloud.s3_notifications import S3Notifications
from localcloud.stack_template import Route, StackTemplate, lazy_handler
from localcloud.step_limits import StepLimits
from localcloud.user_names import CaseInsensitiveUserNames

Mode = Literal["in-process", "server"]

MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
# moto accepts any credentials; fixed fake ones keep a real profile from ever being used.
LOCAL_KEY = "testing"


# moto logs at ERROR every JSONPath a state machine's Choice finds missing, though an `IsPresent` test
# asks exactly that and gets its answer; a failed execution says what failed in its own history.
_MOTO_EVALUATION_LOG = "moto.stepfunctions.parser.asl.component.eval_component"
# moto warns on every Distributed Map that states a ToleratedFailureCount that it does not evaluate it; it
# fails the Map on any failed item, which is what the only count the stack states (0) asks for.
_MOTO_PREPROCESSOR_LOG = "moto.stepfunctions.parser.asl.parse.preprocessor"
_TOLERATED_FAILURES_NOTE = "ToleratedFailureCount declarations currently have no effect"


def _not_the_tolerated_failures_note(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith(_TOLERATED_FAILURES_NOTE)


class LocalCloud:
    """Context manager that stands the synthesized application up on moto.

    ``stacks``: each stack's synthesized template by stack name, in deployment order (tests share one
    synthesis: it takes seconds), copied so the caller's stay as they were; when omitted,
    ``infra.synth.synth_stacks(context)`` is called. The stacks are provisioned as one template
    (``infra.merge``), ``template``.
    ``handlers`` maps a function folder name (POWERTOOLS_SERVICE_NAME) to a callable, replacing the
    default lazy import of ``functions.<name>.handler``.
    """

    def __init__(
        self,
        stacks: Mapping[str, dict[str, Any]] | None = None,
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
        # The templates as deployed, one per stack; start() synthesizes them when none were given.
        self.stacks: dict[str, dict[str, Any]] | None = (
            None if stacks is None else copy.deepcopy(dict(stacks))
        )
        self._context = context
        self._handler_overrides = dict(handlers or {})
        self.template = StackTemplate({}, region=region)
        self.hook = LambdaHook(region=region)
        # Training jobs on moto run for a few reads, then end (see provider_clock.py).
        self.provider_clock = ProviderClock()
        # AWS's Step Functions quotas, enforced on moto's interpreter (see step_limits.py).
        self.step_limits = StepLimits()
        # What the cloud changes in moto and the process while it runs: entered in this order when it
        # starts, left in the reverse order when it stops.
        self.changes: tuple[AbstractContextManager[Any], ...] = (
            self.provider_clock,
            self.hook,
            # S3 notifies once a request has stored the object (see s3_notifications.py).
            S3Notifications(),
            # DynamoDB's 400 KB per item on every update (see item_limits.py); inside the atomic writes'
            # lock, which is why it comes first.
            ItemSizeLimit(),
            AtomicItemWrites(),
            FunctionLogs(),
            # A PUT's body is stored as sent, whatever its Content-Type (see object_bodies.py).
            RawPutBodies(),
            # S3's checks of a presigned URL's signature and expiry, which moto's server skips.
            PresignedUrlChecks({LOCAL_KEY: LOCAL_KEY}),
            self.step_limits,
            # A pool created case-insensitive signs a user in whatever the case typed (see user_names.py).
            CaseInsensitiveUserNames(),
        )
        # Each function's and state machine's calls under its own role's policies (see iam/enforcement.py).
        self.iam = IamEnforcement(self.client)
        self.endpoint_url: str | None = f"http://127.0.0.1:{port}" if mode == "server" else None
        self.bucket = ""
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
        # What start() set up, undone by stop(): None while the cloud is not running.
        self._running: ExitStack | None = None
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
        if self.stacks is None:
            from infra.constructs.training import LOCAL_TRAINING_CONTEXT
            from infra.synth import synth_stacks

            # Training jobs are polled every second here, not every few minutes: moto's Wait really sleeps.
            self.stacks = synth_stacks({**LOCAL_TRAINING_CONTEXT, **(self._context or {})})
        self.timings = {"synthesis_s": time.monotonic() - started}
        # What AWS would refuse to deploy is refused here, before moto creates any of it.
        check_deployable(self.stacks)
        self.template = StackTemplate(merge_stacks(self.stacks), region=self.region)
        started = time.monotonic()
        logging.getLogger(_MOTO_EVALUATION_LOG).setLevel(logging.CRITICAL)
        preprocessor = logging.getLogger(_MOTO_PREPROCESSOR_LOG)
        if _not_the_tolerated_failures_note not in preprocessor.filters:
            preprocessor.addFilter(_not_the_tolerated_failures_note)
        # A failure part-way through undoes what was set up so far, last first, as stop() does.
        with ExitStack() as running:
            running.callback(self._restore_environ)
            self._set_environ(self._base_environ())
            running.callback(_forget_library_clients)
            running.callback(self._clients.clear)
            self._start_moto(running)
            _forget_library_clients()
            for change in self.changes:
                running.enter_context(change)
            self._create_resources()
            self.iam.start(self.template)
            running.callback(self.iam.stop)
            self._running = running.pop_all()
        self.timings["resources_s"] = time.monotonic() - started

    def stop(self, drain_timeout: float = 30.0) -> list[str]:
        """Let running invocations and executions finish, then stop moto and restore the environment.

        Returns what was still running after ``drain_timeout`` (abandoned)."""
        running, self._running = self._running, None
        if running is None:
            return []
        with running:
            return self._quiesce(drain_timeout)

    def _start_moto(self, running: ExitStack) -> None:
        if self.mode == "in-process":
            from moto import mock_aws

            running.enter_context(mock_aws(config=MOTO_CONFIG))  # type: ignore[call-overload]
            return
        from moto.moto_server import werkzeug_app
        from moto.server import ThreadedMotoServer

        # moto's server answers every origin's cross-origin calls; AWS answers only what a bucket's CORS
        # rules allow, which moto's S3 applies once its global CORS is off (a module global: moto is pinned).
        werkzeug_app.DISABLE_GLOBAL_CORS = True  # type: ignore[attr-defined]
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port)
        server.start()
        running.callback(server.stop)
        # moto's server keeps its resources in the process's backends, which outlive a stopped server: a
        # second local cloud in one process would find the first one's tables. It starts empty, as the
        # in-process mock does. Then the executing Step Functions backend is chosen, before any state
        # machine exists.
        self._moto_api("reset", b"")
        self._moto_api("config", json.dumps(MOTO_CONFIG).encode())

    def _moto_api(self, action: str, body: bytes) -> None:
        url = f"{self.endpoint_url}/moto-api/{action}"
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
        created = Provisioner(
            self.template,
            self.client,
            region=self.region,
            name_prefix=self.name_prefix,
            hook=self.hook,
            handlers=self._handler_overrides,
        ).provision()
        self.bucket = created.bucket
        self.table_names = created.table_names
        self.functions = created.functions
        self.state_machine_arns = created.state_machine_arns
        self.state_machine_arn = created.state_machine_arn
        self.bus_name = created.bus_name
        self.user_pool_id = created.user_pool_id
        self.client_id = created.client_id
        self._client_secret = created.client_secret
        self._client_auth_flows = created.client_auth_flows
        self.environment = created.environment
        if self.mode == "in-process":
            # The sandbox function fetches its job through a presigned URL, a plain HTTP request that only
            # a moto server answers. In-process, programs go to the same runner directly, without S3.
            self.environment.pop("SANDBOX_FUNCTIONS", None)
        self.conflicting_variables = created.conflicting_variables
        self._set_environ(self.environment)

    # operations

    def create_user(self, username: str, password: str, *, groups: Sequence[str] = ()) -> str:
        """Create a confirmed user in the pool, add it to ``groups``, and return an ID token for it.

        The groups must exist in the pool (the stack's, such as ``evaluators``): the token carries them in
        ``cognito:groups`` as Cognito's would, and a group the pool lacks is refused as Cognito refuses it.
        """
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
        for group in groups:
            cognito.admin_add_user_to_group(UserPoolId=self.user_pool_id, Username=username, GroupName=group)
        return self.sign_in(username, password)["IdToken"]

    def sign_in(self, username: str, password: str) -> dict[str, str]:
        """Sign a user of the pool in through the stack's app client, as the console does: its ID token
        (an hour's), and the refresh token that gets it new ones (:meth:`refreshed_id_token`)."""
        parameters = {"USERNAME": username, "PASSWORD": password, **self._secret_hash(username)}
        if "ALLOW_ADMIN_USER_PASSWORD_AUTH" in self._client_auth_flows:
            result = self.client("cognito-idp").admin_initiate_auth(
                UserPoolId=self.user_pool_id,
                ClientId=self.client_id,
                AuthFlow="ADMIN_USER_PASSWORD_AUTH",
                AuthParameters=parameters,
            )
        else:
            result = self.client("cognito-idp").initiate_auth(
                ClientId=self.client_id, AuthFlow="USER_PASSWORD_AUTH", AuthParameters=parameters
            )
        tokens = result["AuthenticationResult"]
        return {"IdToken": str(tokens["IdToken"]), "RefreshToken": str(tokens["RefreshToken"])}

    def refreshed_id_token(self, username: str, refresh_token: str) -> str:
        """A new ID token for ``username``, to whom ``refresh_token`` was issued, through the app client's
        REFRESH_TOKEN_AUTH flow (which every Cognito app client allows)."""
        result = self.client("cognito-idp").initiate_auth(
            ClientId=self.client_id,
            AuthFlow="REFRESH_TOKEN_AUTH",
            AuthParameters={"REFRESH_TOKEN": refresh_token, **self._secret_hash(username)},
        )
        return str(result["AuthenticationResult"]["IdToken"])

    def _secret_hash(self, username: str) -> dict[str, str]:
        """SECRET_HASH for a client with a secret (none for the stack's public client)."""
        if not self._client_secret:
            return {}
        digest = hmac.new(
            self._client_secret.encode(), (username + self.client_id).encode(), hashlib.sha256
        ).digest()
        return {"SECRET_HASH": base64.b64encode(digest).decode()}

    def serve_api(self, port: int = 0, *, access_log: bool = True) -> ApiServer:
        """The REST API on loopback, behind the user pool's token checks, calling the real API function."""
        # The catalog imports CDK, which starts Node.js: only serving the API needs the function's name.
        from infra.constructs.catalog import API

        verifier = TokenVerifier(
            user_pool_id=self.user_pool_id, client_id=self.client_id, jwks=self.jwks(), region=self.region
        )
        return ApiServer(
            self.routes(),
            self._handler_overrides.get(API.name) or lazy_handler(API.name),
            verifier,
            function_name=API.name,
            port=port,
            stage=self.template.stage_name(),
            region=self.region,
            access_log=access_log,
        )

    def jwks(self) -> dict[str, Any]:
        """The public signing keys of the pool's tokens (the pool's .well-known/jwks.json)."""
        return moto_jwks()

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
            if not self.hook.asynchronous.wait_idle(max(0.0, deadline - time.monotonic())):
                return ["asynchronous Lambda invocations"]
            running = self.drain(max(0.0, deadline - time.monotonic()))
            if running or not self.hook.asynchronous.busy:
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
