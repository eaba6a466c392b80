"""Run moto's Lambda functions as in-process Python handlers.

Without Docker, moto's Lambda only echoes the payload back. Every invocation path (boto3 ``invoke``, the
state machine's Lambda tasks, S3 notifications) ends in ``LambdaFunction._invoke_lambda``, and with
``use_docker: False`` ``LambdaSimpleBackend.invoke`` answers before it. Both are private moto methods
(moto is pinned for this reason), so this is the only module that touches them: ``LambdaHook`` replaces
them while it is active and puts the originals back on exit.

Asynchronous invocations stay asynchronous, as on AWS: an S3 notification (moto's
``s3.notifications._invoke_awslambda``) or an ``InvocationType=Event`` call returns at once and the
handler runs on its own thread.

S3 notifications are made as AWS makes them: moto sends them from inside the request, before it stores
the object's metadata, so the hook holds them back until the S3 request that caused them has finished
(``S3Response.key_response`` / ``bucket_response``), and adds the ``versionId`` of the object version
that a versioned bucket's events carry.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from infra.local.function_logs import running_as
from infra.local.template import ACCOUNT_ID

Handler = Callable[[Any, Any], Any]

DEFAULT_TIMEOUT_S = 900
DEFAULT_MEMORY_MB = 128
EXIT_WAIT_S = 60.0


class LambdaContext:
    """The attributes of the Lambda runtime's context object that handlers and powertools read."""

    def __init__(
        self,
        function_name: str,
        *,
        region: str = "us-east-1",
        memory_limit_in_mb: int = DEFAULT_MEMORY_MB,
        timeout_s: int = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{function_name}"
        self.memory_limit_in_mb = memory_limit_in_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"local/{self.aws_request_id}"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def error_payload(exc: BaseException) -> dict[str, Any]:
    """The payload Lambda returns for an unhandled exception; Step Functions reads errorType as the error."""
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "stackTrace": traceback.format_exception(type(exc), exc, exc.__traceback__),
    }


def call_handler(handler: Handler, event: Any, context: LambdaContext) -> tuple[str, bool]:
    """Run one invocation; return the JSON payload and whether it is an error payload."""
    try:
        result = handler(event, context)
    except Exception as exc:
        return json.dumps(error_payload(exc)), True
    return json.dumps(result, default=str), False


class LambdaHook:
    """Context manager: while active, invoking a moto Lambda function calls ``handlers[function_name]``.

    Synchronous invocations run in the caller's thread, asynchronous ones on a thread of their own;
    handlers are not serialized: a handler that waits on a state machine execution which itself invokes
    another handler must not deadlock. ``wait_idle`` waits for the asynchronous ones.
    """

    _active_lock = threading.Lock()
    _active: LambdaHook | None = None

    def __init__(self, handlers: Mapping[str, Handler] | None = None, *, region: str = "us-east-1") -> None:
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self.services: dict[str, str] = {}
        self.region = region
        self._originals: list[tuple[Any, str, Any]] = []
        self._s3_requests = _S3Requests()
        self._inflight = 0
        self._idle = threading.Condition()
        self._async = threading.local()

    @property
    def active(self) -> bool:
        return LambdaHook._active is self

    def register(self, function_name: str, handler: Handler, *, service: str | None = None) -> None:
        """``service``: the function's folder, whose logger its library log lines are written under."""
        self.handlers[function_name] = handler
        if service is not None:
            self.services[function_name] = service

    def invoke(
        self, function_name: str, event: Any, *, memory_mb: int, timeout_s: int
    ) -> tuple[str, bool, str]:
        handler = self.handlers.get(function_name)
        context = LambdaContext(
            function_name, region=self.region, memory_limit_in_mb=memory_mb, timeout_s=timeout_s
        )
        if handler is None:
            missing = LookupError(
                f"no in-process handler is registered for Lambda function {function_name!r}; "
                f"registered: {sorted(self.handlers)}"
            )
            return json.dumps(error_payload(missing)), True, ""
        with running_as(self.services.get(function_name)):
            payload, errored = call_handler(handler, _as_event(event), context)
        if errored and getattr(self._async, "active", False):
            # Nobody receives an asynchronous invocation's answer (AWS would retry, then dead-letter it).
            sys.stderr.write(f"asynchronous invocation of {function_name} failed: {payload}\n")
        return payload, errored, f"RequestId: {context.aws_request_id}\n"

    def dispatch(self, call: Callable[[], Any], label: str) -> None:
        """Run ``call`` on its own thread, as Lambda runs an asynchronous invocation."""
        with self._idle:
            self._inflight += 1

        def run() -> None:
            self._async.active = True
            try:
                call()
            except Exception:
                sys.stderr.write(f"asynchronous invocation {label} failed:\n{traceback.format_exc()}")
            finally:
                with self._idle:
                    self._inflight -= 1
                    self._idle.notify_all()

        threading.Thread(target=run, name=f"lambda-async-{label}", daemon=True).start()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no asynchronous invocation is running; False if some still were after ``timeout``."""
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout)

    @property
    def busy(self) -> bool:
        with self._idle:
            return self._inflight > 0

    def __enter__(self) -> LambdaHook:
        from moto.awslambda.models import LambdaBackend, LambdaFunction
        from moto.awslambda_simple.models import LambdaSimpleBackend
        from moto.s3 import notifications
        from moto.s3.responses import S3Response

        with LambdaHook._active_lock:
            if LambdaHook._active is not None:
                raise RuntimeError("a LambdaHook is already active in this process; exit it first")
            LambdaHook._active = self
        hook = self

        def _invoke_lambda(function: Any, event: Any = None) -> tuple[str, bool, str]:
            return hook.invoke(
                function.function_name,
                event,
                memory_mb=int(function.memory_size or DEFAULT_MEMORY_MB),
                timeout_s=int(function.timeout or DEFAULT_TIMEOUT_S),
            )

        original_invoke = LambdaFunction.__dict__["invoke"]
        original_notify = notifications._invoke_awslambda
        original_send_event = notifications.send_event
        original_s3_event = notifications._get_s3_event

        def invoke(function: Any, body: str, request_headers: Any, response_headers: Any) -> str | bytes:
            if request_headers.get("x-amz-invocation-type") != "Event":
                result: str | bytes = original_invoke(function, body, request_headers, response_headers)
                return result
            hook.dispatch(
                lambda: original_invoke(function, body, request_headers, {}), function.function_name
            )
            return ""

        def notify(account_id: str, event_body: Any, fn_arn: str, region_name: str) -> None:
            hook.dispatch(
                lambda: original_notify(account_id, event_body, fn_arn, region_name), fn_arn.split(":")[-1]
            )

        def send_event(account_id: str, event_name: Any, bucket: Any, key: Any) -> None:
            hook._s3_requests.defer(lambda: original_send_event(account_id, event_name, bucket, key))

        def s3_event(event_name: str, bucket: Any, key: Any, notification_id: str) -> dict[str, Any]:
            event: dict[str, Any] = original_s3_event(event_name, bucket, key, notification_id)
            if bucket.is_versioned:
                for record in event["Records"]:
                    record["s3"]["object"]["versionId"] = key.version_id
            return event

        def finishing_notifications(response: Callable[..., Any]) -> Callable[..., Any]:
            def respond(*args: Any, **kwargs: Any) -> Any:
                return hook._s3_requests.run(lambda: response(*args, **kwargs))

            return respond

        patches = [
            (LambdaFunction, "_invoke_lambda", _invoke_lambda),
            (LambdaFunction, "invoke", invoke),
            # The simple backend answers with a canned echo; route it to the real backend's invoke,
            # which reaches _invoke_lambda above.
            (LambdaSimpleBackend, "invoke", LambdaBackend.invoke),
            (notifications, "_invoke_awslambda", notify),
            (notifications, "send_event", send_event),
            (notifications, "_get_s3_event", s3_event),
            (S3Response, "key_response", finishing_notifications(S3Response.key_response)),
            (S3Response, "bucket_response", finishing_notifications(S3Response.bucket_response)),
        ]
        self._originals = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
        for owner, name, replacement in patches:
            setattr(owner, name, replacement)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Asynchronous invocations still running would otherwise reach moto's echo after the restore.
        self.wait_idle(EXIT_WAIT_S)
        for owner, name, original in self._originals:
            setattr(owner, name, original)
        self._originals = []
        with LambdaHook._active_lock:
            LambdaHook._active = None


class _S3Requests:
    """Holds back the S3 notifications a request causes until that request has finished.

    moto emits them in the middle of the request (``put_object`` notifies before it sets the object's
    metadata, ACL and tags); S3 notifies about an object once it is stored. Per thread, because moto
    serves concurrent requests on concurrent threads; nested calls (a bucket-or-key request delegating to
    the other) flush once, at the outermost.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def run(self, request: Callable[[], Any]) -> Any:
        state = self._local
        state.depth = getattr(state, "depth", 0) + 1
        if state.depth == 1:
            state.deferred = []
        try:
            return request()
        finally:
            state.depth -= 1
            if state.depth == 0:
                deferred, state.deferred = state.deferred, []
                for send in deferred:
                    send()

    def defer(self, send: Callable[[], None]) -> None:
        if getattr(self._local, "depth", 0):
            self._local.deferred.append(send)
        else:
            send()


def _as_event(event: Any) -> Any:
    # moto hands over the request body already parsed, except on paths that pass the raw JSON string.
    if isinstance(event, (str, bytes)):
        try:
            return json.loads(event)
        except ValueError:
            return event
    return event
