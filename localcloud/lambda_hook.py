"""moto's Lambda functions, run as in-process Python handlers.

Without Docker, moto's Lambda only echoes the payload back. Every invocation path (boto3 ``invoke``, the
state machine's Lambda tasks, S3 notifications) ends in ``LambdaFunction._invoke_lambda``, and with
``use_docker: False`` ``LambdaSimpleBackend.invoke`` answers before it. Both are private moto methods
(moto is pinned for this reason), so this is the only module that touches them: ``LambdaHook`` replaces
them while it is active and puts the originals back on exit (see patches.py).

Each invocation runs as Lambda's runtime runs it (``lambda_runtime.py``); an asynchronous one, an S3
notification's (moto's ``s3.notifications._invoke_awslambda``) or an ``InvocationType=Event`` call's, as
Lambda makes those (``lambda_async.py``).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any, Self

from localcloud import lambda_runtime
from localcloud.callers import running_as
from localcloud.lambda_async import AsyncInvocations
from localcloud.lambda_runtime import (
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_S,
    MAX_SYNC_RESPONSE_BYTES,
    Handler,
    error_payload,
    request_too_large,
    response_too_large,
)
from localcloud.patches import Patch, Patches

EXIT_WAIT_S = 60.0


class LambdaHook(Patches):
    """Context manager: while active, invoking a moto Lambda function calls ``handlers[function_name]``.

    Synchronous invocations run in the caller's thread, asynchronous ones on a thread of their own
    (``asynchronous``); handlers are not serialized: a handler that waits on a state machine execution
    which itself invokes another handler must not deadlock. One hook is active in a process at a time.
    """

    _active_lock = threading.Lock()
    _active: LambdaHook | None = None

    def __init__(self, handlers: Mapping[str, Handler] | None = None, *, region: str = "us-east-1") -> None:
        super().__init__()
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self.services: dict[str, str] = {}
        self.region = region
        self.asynchronous = AsyncInvocations(self._invoke_once, self.services, region=region)

    def register(self, function_name: str, handler: Handler, *, service: str | None = None) -> None:
        """``service``: the function's folder, whose logger its library log lines are written under."""
        self.handlers[function_name] = handler
        if service is not None:
            self.services[function_name] = service

    def invoke(
        self, function_name: str, event: Any, *, memory_mb: int, timeout_s: int
    ) -> tuple[str, bool, str]:
        if self.asynchronous.take_pending():
            return self.asynchronous.deliver(function_name, event, memory_mb=memory_mb, timeout_s=timeout_s)
        payload, errored, request_id = self._invoke_once(
            function_name, event, memory_mb=memory_mb, timeout_s=timeout_s
        )
        size = len(payload.encode())
        if size > MAX_SYNC_RESPONSE_BYTES:
            # Lambda refuses to hand back what the handler answered; the caller sees only the error.
            return json.dumps(response_too_large(size)), True, f"RequestId: {request_id}\n"
        return payload, errored, f"RequestId: {request_id}\n"

    def _invoke_once(
        self, function_name: str, event: Any, *, memory_mb: int, timeout_s: int, request_id: str | None = None
    ) -> tuple[str, bool, str]:
        handler = self.handlers.get(function_name)
        if handler is None:
            missing = LookupError(
                f"no in-process handler is registered for Lambda function {function_name!r}; "
                f"registered: {sorted(self.handlers)}"
            )
            return json.dumps(error_payload(missing)), True, request_id or str(uuid.uuid4())
        with running_as(self.services.get(function_name)):
            return lambda_runtime.run(
                handler,
                function_name,
                event,
                region=self.region,
                memory_mb=memory_mb,
                timeout_s=timeout_s,
                request_id=request_id,
            )

    def declare(self) -> Iterator[Patch]:
        from moto.awslambda.models import LambdaBackend, LambdaFunction
        from moto.awslambda_simple.models import LambdaSimpleBackend
        from moto.s3 import notifications

        hook = self

        def _invoke_lambda(function: Any, event: Any = None) -> tuple[str, bool, str]:
            return hook.invoke(
                function.function_name,
                event,
                memory_mb=int(function.memory_size or DEFAULT_MEMORY_MB),
                timeout_s=int(function.timeout or DEFAULT_TIMEOUT_S),
            )

        def invoke(original: Callable[..., str | bytes]) -> Callable[..., str | bytes]:
            def refused_or_dispatched(
                function: Any, body: str, request_headers: Any, response_headers: Any
            ) -> str | bytes:
                asynchronous = request_headers.get("x-amz-invocation-type") == "Event"
                size = len(body.encode() if isinstance(body, str) else body or b"")
                refusal = request_too_large(size, asynchronous=asynchronous)
                if refusal is not None:
                    raise _request_entity_too_large(refusal)
                if not asynchronous:
                    return original(function, body, request_headers, response_headers)
                hook.asynchronous.dispatch(
                    lambda: original(function, body, request_headers, {}), function.function_name
                )
                return ""

            return refused_or_dispatched

        def notify(original: Callable[..., None]) -> Callable[..., None]:
            def dispatched(account_id: str, event_body: Any, fn_arn: str, region_name: str) -> None:
                hook.asynchronous.dispatch(
                    lambda: original(account_id, event_body, fn_arn, region_name), fn_arn.split(":")[-1]
                )

            return dispatched

        yield Patch(LambdaFunction, "_invoke_lambda", _invoke_lambda)
        yield Patch.wrapping(LambdaFunction, "invoke", invoke)
        # The simple backend answers with a canned echo; route it to the real backend's invoke, which
        # reaches _invoke_lambda above.
        yield Patch(LambdaSimpleBackend, "invoke", LambdaBackend.invoke)
        yield Patch.wrapping(notifications, "_invoke_awslambda", notify)

    def __enter__(self) -> Self:
        with LambdaHook._active_lock:
            if LambdaHook._active is not None:
                raise RuntimeError("a LambdaHook is already active in this process; exit it first")
            LambdaHook._active = self
        try:
            return super().__enter__()
        except BaseException:
            self._release()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Asynchronous invocations still running would otherwise reach moto's echo after the restore.
        self.asynchronous.wait_idle(EXIT_WAIT_S)
        try:
            super().__exit__(exc_type, exc, tb)
        finally:
            self._release()

    def _release(self) -> None:
        with LambdaHook._active_lock:
            LambdaHook._active = None


def _request_entity_too_large(message: str) -> Exception:
    """Lambda's 413 answer to an invocation request over its payload quota."""
    from moto.core.exceptions import JsonRESTError

    error = JsonRESTError("RequestEntityTooLargeException", message)
    error.code = 413
    return error
