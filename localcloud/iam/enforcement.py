"""Every AWS call a function or a state machine makes, authorized against its own role's policies.

moto checks no policy that CDK writes (its own IAM checks compare every statement's resource with "*"),
so a grant missing from a synthesized role would be found only on AWS. While :class:`IamEnforcement` is
active, every boto3 call made in this process passes through one checkpoint
(``BaseClient._make_api_call``: the service, the operation and its parameters, in the caller's thread,
before anything is sent) and:

- a call made while a function runs (``callers.running_as``, set by the Lambda hook and the API server)
  is authorized against that function's role, one made by a state machine's execution against the state
  machine's role (its service integrations: Lambda, DynamoDB, EventBridge, S3 item readers...);
- what the call needs (``actions.py``: action, resource ARN, condition keys) is decided by IAM's policy
  evaluation (``simulator.py``), and a call any part of which is not allowed is refused as AWS refuses
  it: ``AccessDenied`` from S3, ``AccessDeniedException`` from the others, with AWS's sentence;
- an operation ``actions.py`` does not know is refused too, loudly, never let through;
- a presigned URL a caller signs is authorized as the call it stands for, when it is signed;
- a call with no caller is the operator's (tests, fixtures, the command line: the account's
  administrator) and is not checked.

A caller is a context variable: threads a caller starts (``threading.Thread``, ``ThreadPoolExecutor``
tasks: concurrent model calls, S3 transfers) run as the caller that started them, so work handed to a
thread does not lose its role and slip through as the operator's.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, ClassVar

from botocore.exceptions import ClientError

from localcloud.callers import Caller, current_caller, running_state_machine
from localcloud.iam.actions import Request, Secret, Where, requests_for
from localcloud.iam.roles import Role, Roles, template_roles
from localcloud.iam.simulator import ALLOWED, EXPLICITLY_DENIED, PolicySimulator
from localcloud.patches import Patch, Patches
from localcloud.stack_template import ACCOUNT_ID, StackTemplate

# S3 answers a refusal with its own code; the JSON and query services with AccessDeniedException.
_DENIED_CODES = {"s3": "AccessDenied"}
_DENIED_STATUS = {"s3": 403, "lambda": 403}
_DEFAULT_DENIED_CODE = "AccessDeniedException"
_DEFAULT_DENIED_STATUS = 400

# Set while the enforcement itself asks a service (a secret's tags), which no role pays for.
_unchecked: ContextVar[bool] = ContextVar("unchecked", default=False)


def refusal(role: Role, request: Request, decision: str) -> str:
    """AWS's sentence for a refused request."""
    why = (
        "with an explicit deny in an identity-based policy"
        if decision == EXPLICITLY_DENIED
        else f"because no identity-based policy allows the {request.action} action"
    )
    return (
        f"User: {role.principal} is not authorized to perform: {request.action} on resource: "
        f"{request.resource} {why}"
    )


class IamEnforcement:
    """Between ``start(template)`` (the provisioned stack, its physical ids recorded) and ``stop``, the calls
    of functions and state machines are authorized.

    ``client``: the operator's client factory (a service name -> boto3 client), which secrets' tags are
    read with. ``checked`` counts the calls authorized against a role's policies; ``refusals`` holds AWS's
    message for each one refused; ``total_checked`` and ``total_refused`` count them over every local
    cloud of the process.
    """

    total_checked: ClassVar[int] = 0
    total_refused: ClassVar[int] = 0
    _active: ClassVar[IamEnforcement | None] = None

    def __init__(self, client: Callable[[str], Any]) -> None:
        self._client = client
        self.roles = Roles({}, {})
        self.checked = 0
        self.refusals: list[str] = []
        self._count = threading.Lock()
        self._simulator: PolicySimulator | None = None
        self._where = Where(region="", account=ACCOUNT_ID, secret=self._secret)
        self._checkpoints = _Checkpoints()

    @property
    def active(self) -> bool:
        return IamEnforcement._active is self

    def start(self, template: StackTemplate) -> None:
        if IamEnforcement._active is not None:
            raise RuntimeError("another local cloud already enforces IAM in this process")
        self.roles = template_roles(template)
        self._where = Where(region=template.region, account=ACCOUNT_ID, secret=self._secret)
        self._simulator = PolicySimulator(
            [*self.roles.functions.values(), *self.roles.state_machines.values()], account=ACCOUNT_ID
        )
        self._checkpoints.__enter__()
        IamEnforcement._active = self

    def stop(self) -> None:
        if not self.active:
            return
        self._checkpoints.__exit__(None, None, None)
        IamEnforcement._active = None
        if self._simulator is not None:
            self._simulator.close()
            self._simulator = None

    def role_of(self, caller: Caller) -> Role:
        if caller.state_machine is not None:
            found = self.roles.state_machines.get(caller.state_machine)
        else:
            found = self.roles.functions.get(str(caller.function))
        if found is None:
            raise LookupError(f"the template gives no role to {caller}: its calls cannot be authorized")
        return found

    def authorize(self, client: Any, operation: str, params: dict[str, Any]) -> None:
        """Raise the error AWS answers when the running caller's role does not allow this call."""
        caller = current_caller()
        if caller is None or _unchecked.get():
            return
        role = self.role_of(caller)
        service = client.meta.service_model.service_name
        requests = requests_for(service, operation, params, self._where)
        with self._count:
            self.checked += 1
            IamEnforcement.total_checked += 1
        assert self._simulator is not None
        for request in requests:
            decision = self._simulator.decide(role, request)
            if decision != ALLOWED:
                message = refusal(role, request, decision)
                with self._count:
                    self.refusals.append(message)
                    IamEnforcement.total_refused += 1
                code = _DENIED_CODES.get(service, _DEFAULT_DENIED_CODE)
                status = _DENIED_STATUS.get(service, _DEFAULT_DENIED_STATUS)
                response = {
                    "Error": {"Code": code, "Message": message},
                    "ResponseMetadata": {"HTTPStatusCode": status},
                }
                raise client.exceptions.from_code(code)(response, operation)

    def _secret(self, secret_id: str) -> Secret:
        token = _unchecked.set(True)
        try:
            described = self._client("secretsmanager").describe_secret(SecretId=secret_id)
        except ClientError:
            # A secret that is not there has no tags; the call itself then says that it is not there.
            arn = secret_id
            if not arn.startswith("arn:"):
                arn = f"arn:aws:secretsmanager:{self._where.region}:{ACCOUNT_ID}:secret:{secret_id}"
            return Secret(arn)
        finally:
            _unchecked.reset(token)
        tags = {str(tag["Key"]): str(tag["Value"]) for tag in described.get("Tags", [])}
        return Secret(str(described["ARN"]), tags)


class _Checkpoints(Patches):
    """Where calls are authorized, and where a caller is handed on to the threads it starts."""

    def declare(self) -> Iterator[Patch]:
        import botocore.client
        import botocore.signers
        from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

        yield Patch.wrapping(botocore.client.BaseClient, "_make_api_call", _authorized_call)
        # Clients made from now on sign presigned URLs with this (botocore adds it to each client class).
        yield Patch.wrapping(botocore.signers, "generate_presigned_url", _authorized_presign)
        yield Patch.wrapping(threading.Thread, "start", _start_as_caller)
        yield Patch.wrapping(ThreadPoolExecutor, "submit", _submit_as_caller)
        yield Patch.wrapping(ExecutionWorker, "_execution_logic", _execution_as_state_machine)


def _authorized_call(make_api_call: Any) -> Any:
    def authorized_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        enforcement = IamEnforcement._active
        if enforcement is not None:
            enforcement.authorize(client, operation, params)
        return make_api_call(client, operation, params)

    return authorized_call


def _authorized_presign(presign: Any) -> Any:
    def authorized_presign(client: Any, *args: Any, **kwargs: Any) -> Any:
        # AWS authorizes a presigned URL when it is used, against the role that signed it; locally it is
        # checked when signed, against the signing caller's role: a URL its signer may not use is refused.
        enforcement = IamEnforcement._active
        if enforcement is not None:
            method = kwargs.get("ClientMethod", args[0] if args else None)
            params = kwargs.get("Params", args[1] if len(args) > 1 else None) or {}
            enforcement.authorize(client, client._PY_TO_OP_NAME[method], params)
        return presign(client, *args, **kwargs)

    return authorized_presign


def _start_as_caller(start: Any) -> Any:
    def start_as_caller(thread: threading.Thread) -> None:
        if current_caller() is not None:
            context = contextvars.copy_context()
            run = thread.run
            # The thread's run method, on the instance: Thread._bootstrap_inner calls self.run().
            thread.run = lambda: context.run(run)  # type: ignore[method-assign]
        start(thread)

    return start_as_caller


def _submit_as_caller(submit: Any) -> Any:
    def submit_as_caller(executor: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        # A pool's threads outlive the task that started them: each task runs as the caller submitting it.
        if current_caller() is not None:
            return submit(executor, contextvars.copy_context().run, fn, *args, **kwargs)
        return submit(executor, fn, *args, **kwargs)

    return submit_as_caller


def _execution_as_state_machine(execution_logic: Any) -> Any:
    def execution_as_state_machine(worker: Any) -> Any:
        # The execution's thread was started by whoever started the execution: it runs as the machine.
        with running_state_machine(str(worker._evaluation_details.state_machine_details.arn)):
            return execution_logic(worker)

    return execution_as_state_machine
