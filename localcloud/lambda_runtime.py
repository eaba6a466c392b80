"""One Lambda invocation of an in-process Python handler, as Lambda's runtime makes it.

The handler gets the context object Lambda's runtime gives, and its answer or failure comes back as
Lambda reports it: an unhandled exception as an error payload (whose errorType Step Functions reads as the
error), a runtime that died as a runtime exit, a run past the function's timeout as Lambda's timeout, an
answer over the payload quota as Lambda's error; a request over its quota is refused before any handler
runs.
"""

from __future__ import annotations

import json
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from localcloud.stack_template import ACCOUNT_ID

Handler = Callable[[Any, Any], Any]

DEFAULT_TIMEOUT_S = 900
# Lambda's own limit: no function runs longer, whatever its configuration says.
MAX_TIMEOUT_S = 900
DEFAULT_MEMORY_MB = 128
# What Lambda reports for an invocation whose runtime process died (killed out of memory, exited).
RUNTIME_EXIT = "Runtime.ExitError"
# What Lambda reports for an invocation that ran past its function's timeout.
TIMED_OUT = "Sandbox.Timedout"
# Lambda's invocation payload quotas, in bytes, as its errors state them: a synchronous request must be
# smaller than 6 MiB, a synchronous response at most 6 MiB and 100 bytes, an asynchronous (Event)
# request at most 1 MiB (256 KiB until October 2025).
MAX_SYNC_REQUEST_BYTES = 6_291_456
MAX_SYNC_RESPONSE_BYTES = 6_291_556
MAX_ASYNC_REQUEST_BYTES = 1_048_576
# What Lambda reports for a synchronous invocation whose handler answered more than it may return.
RESPONSE_TOO_LARGE = "Function.ResponseSizeTooLarge"


class LambdaContext:
    """The attributes of the Lambda runtime's context object that handlers and powertools read."""

    def __init__(
        self,
        function_name: str,
        *,
        region: str = "us-east-1",
        memory_limit_in_mb: int = DEFAULT_MEMORY_MB,
        timeout_s: int = DEFAULT_TIMEOUT_S,
        request_id: str | None = None,
    ) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{function_name}"
        self.memory_limit_in_mb = memory_limit_in_mb
        self.aws_request_id = request_id or str(uuid.uuid4())
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


def timed_out(request_id: str, timeout_s: float) -> dict[str, Any]:
    """The error payload of an invocation that ran past its function's timeout, as Lambda words it."""
    message = f"RequestId: {request_id} Error: Task timed out after {timeout_s:.2f} seconds"
    return {"errorType": TIMED_OUT, "errorMessage": message}


def response_too_large(size: int) -> dict[str, Any]:
    """The error payload of a synchronous invocation whose answer is over the limit, as Lambda words it."""
    message = (
        f"Response payload size ({size} bytes) exceeded maximum allowed payload size "
        f"({MAX_SYNC_RESPONSE_BYTES} bytes)."
    )
    return {"errorType": RESPONSE_TOO_LARGE, "errorMessage": message}


def request_too_large(size: int, *, asynchronous: bool) -> str | None:
    """Lambda's refusal of a request payload of ``size`` bytes (its 413 RequestEntityTooLargeException), or
    None when Lambda takes it."""
    if asynchronous and size > MAX_ASYNC_REQUEST_BYTES:
        limit = MAX_ASYNC_REQUEST_BYTES
        return f"{size} byte payload is too large for the Event invocation type (limit {limit} bytes)"
    if not asynchronous and size >= MAX_SYNC_REQUEST_BYTES:
        return f"Request must be smaller than {MAX_SYNC_REQUEST_BYTES} bytes for the InvokeFunction operation"
    return None


def call_handler(handler: Handler, event: Any, context: LambdaContext) -> tuple[str, bool]:
    """Run one invocation; return the JSON payload and whether it is an error payload.

    An exception that is not an ``Exception`` (``SystemExit``, or a test's stand-in for the process being
    killed) ends the invocation the way a dead runtime does: the handler's ``except Exception`` blocks,
    powertools' among them, never ran, and Lambda reports a runtime exit rather than the handler's error.
    """
    try:
        result = handler(event, context)
    except Exception as exc:
        return json.dumps(error_payload(exc)), True
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as exc:
        message = f"RequestId: {context.aws_request_id} Error: Runtime exited with error: {exc!r}"
        return json.dumps({"errorMessage": message, "errorType": RUNTIME_EXIT}), True
    return json.dumps(result, default=str), False


def run(
    handler: Handler,
    function_name: str,
    event: Any,
    *,
    region: str,
    memory_mb: int,
    timeout_s: int,
    request_id: str | None = None,
) -> tuple[str, bool, str]:
    """Run one invocation; return the JSON payload, whether it is an error payload, and the request id."""
    limit_s = min(timeout_s, MAX_TIMEOUT_S)
    context = LambdaContext(
        function_name, region=region, memory_limit_in_mb=memory_mb, timeout_s=limit_s, request_id=request_id
    )
    started = time.monotonic()
    payload, errored = call_handler(handler, as_event(event), context)
    if time.monotonic() - started > limit_s:
        # Lambda would have stopped the handler at its timeout; in-process it ran on, so what it answered
        # is dropped and the caller sees the timeout Lambda reports.
        return json.dumps(timed_out(context.aws_request_id, limit_s)), True, context.aws_request_id
    return payload, errored, context.aws_request_id


def as_event(event: Any) -> Any:
    """The event a handler is given: moto hands over the request body already parsed, except on paths that
    pass the raw JSON string."""
    if isinstance(event, (str, bytes)):
        try:
            return json.loads(event)
        except ValueError:
            return event
    return event
