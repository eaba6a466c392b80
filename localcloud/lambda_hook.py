"""Run moto's Lambda functions as in-process Python handlers.

Without Docker, moto's Lambda only echoes the payload back. Every invocation path (boto3 ``invoke``, the
state machine's Lambda tasks, S3 notifications) ends in ``LambdaFunction._invoke_lambda``, and with
``use_docker: False`` ``LambdaSimpleBackend.invoke`` answers before it. Both are private moto methods
(moto is pinned for this reason), so this is the only module that touches them: ``LambdaHook`` replaces
them while it is active and puts the originals back on exit.

Asynchronous invocations stay asynchronous, as on AWS: an S3 notification (moto's
``s3.notifications._invoke_awslambda``) or an ``InvocationType=Event`` call returns at once and the
handler runs on its own thread. One that fails is retried and then dead-lettered as Lambda does it (see
``AsyncConfig``); a dead-letter queue that a function consumes (an event source mapping) hands it the
message as Lambda's poller would.

S3 notifications are made as AWS makes them: moto sends them from inside the request, before it stores
the object's metadata, so the hook holds them back until the S3 request that caused them has finished
(``S3Response.key_response`` / ``bucket_response``), and adds the ``versionId`` of the object version
that a versioned bucket's events carry. A multipart upload is announced once, by
``ObjectCreated:CompleteMultipartUpload``, as S3 announces it: moto completes it by storing the object
through its ``put_object`` (which sends ``ObjectCreated:Put``) and tagging it (``ObjectTagging:Put``), and
the hook holds back every event but the completion's while moto completes the upload.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from localcloud.callers import running_as
from localcloud.stack_template import ACCOUNT_ID

Handler = Callable[[Any, Any], Any]

DEFAULT_TIMEOUT_S = 900
# Lambda's own limit: no function runs longer, whatever its configuration says.
MAX_TIMEOUT_S = 900
DEFAULT_MEMORY_MB = 128
EXIT_WAIT_S = 60.0
# Lambda retries a failed asynchronous invocation twice unless the function's event invoke configuration
# says otherwise (MaximumRetryAttempts, 0-2).
DEFAULT_RETRY_ATTEMPTS = 2
# Lambda waits about 1 minute before the first retry and 2 minutes before the second; locally the same
# number of attempts comes after short waits, so that tests see the whole sequence in well under a second.
LOCAL_RETRY_DELAYS_S = (0.05, 0.1)
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


@dataclass(frozen=True)
class AsyncConfig:
    """How Lambda treats a function's failed asynchronous invocations.

    ``retry_attempts``: deliveries after the first (MaximumRetryAttempts). ``dead_letter_queue``: the URL
    of the queue the event goes to after the last one fails (the function's DeadLetterConfig), if any.
    """

    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    dead_letter_queue: str | None = None


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
        self.async_configs: dict[str, AsyncConfig] = {}
        self.queue_consumers: dict[str, QueueConsumer] = {}
        self.retry_delays_s: tuple[float, ...] = LOCAL_RETRY_DELAYS_S
        # The dead-letter queues are moto SQS queues, reached through the cloud's client.
        self.sqs: Callable[[], Any] | None = None

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
        # Only the invocation a dispatch started is asynchronous; what its handler invokes in turn is not.
        asynchronous = getattr(self._async, "pending", False)
        self._async.pending = False
        if asynchronous:
            return self._invoke_async(function_name, event, memory_mb=memory_mb, timeout_s=timeout_s)
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
        context = LambdaContext(
            function_name,
            region=self.region,
            memory_limit_in_mb=memory_mb,
            timeout_s=min(timeout_s, MAX_TIMEOUT_S),
            request_id=request_id,
        )
        if handler is None:
            missing = LookupError(
                f"no in-process handler is registered for Lambda function {function_name!r}; "
                f"registered: {sorted(self.handlers)}"
            )
            return json.dumps(error_payload(missing)), True, context.aws_request_id
        limit_s = min(timeout_s, MAX_TIMEOUT_S)
        started = time.monotonic()
        with running_as(self.services.get(function_name)):
            payload, errored = call_handler(handler, _as_event(event), context)
        if time.monotonic() - started > limit_s:
            # Lambda would have stopped the handler at its timeout; in-process it ran on, so what it
            # answered is dropped and the caller sees the timeout Lambda reports.
            return json.dumps(timed_out(context.aws_request_id, limit_s)), True, context.aws_request_id
        return payload, errored, context.aws_request_id

    def _invoke_async(
        self, function_name: str, event: Any, *, memory_mb: int, timeout_s: int
    ) -> tuple[str, bool, str]:
        """Deliver the event until it succeeds or its retries run out, then dead-letter it, as Lambda does.

        Every attempt carries the same request id: Lambda keeps it across the retries of one event, and
        the dead-letter message names it.
        """
        config = self.async_configs.get(function_name, AsyncConfig())
        request_id = str(uuid.uuid4())
        attempts = config.retry_attempts + 1
        payload = ""
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                time.sleep(self.retry_delays_s[min(attempt - 1, len(self.retry_delays_s)) - 1])
            payload, errored, _ = self._invoke_once(
                function_name, event, memory_mb=memory_mb, timeout_s=timeout_s, request_id=request_id
            )
            if not errored:
                return payload, False, f"RequestId: {request_id}\n"
            sys.stderr.write(
                f"asynchronous invocation of {function_name} failed (attempt {attempt} of {attempts}): "
                f"{payload}\n"
            )
        if config.dead_letter_queue is not None:
            # Lambda sends the dead letter with the function's own role, as it is configured to.
            with running_as(self.services.get(function_name)):
                self._dead_letter(config.dead_letter_queue, event, request_id, payload)
        return payload, True, f"RequestId: {request_id}\n"

    def _dead_letter(self, queue_url: str, event: Any, request_id: str, payload: str) -> None:
        """Send the event to the queue with the attributes Lambda adds, then let its consumer have it.

        Lambda's dead-letter message is the event itself, with RequestID (String), ErrorCode (Number, the
        HTTP status of the invocation: 200 for an error of the function) and ErrorMessage (String, the
        error message's first 1 KB).
        """
        if self.sqs is None:
            raise RuntimeError("the hook has no SQS client to send dead letters with; set LambdaHook.sqs")
        error = json.loads(payload)
        message = str(error.get("errorMessage") or error.get("errorType") or "unknown error")
        self.sqs().send_message(
            QueueUrl=queue_url,
            MessageBody=json.dumps(_as_event(event)),
            MessageAttributes={
                "RequestID": {"DataType": "String", "StringValue": request_id},
                "ErrorCode": {"DataType": "Number", "StringValue": "200"},
                "ErrorMessage": {
                    "DataType": "String",
                    "StringValue": message.encode()[:1024].decode(errors="ignore"),
                },
            },
        )
        consumer = self.queue_consumers.get(queue_url)
        if consumer is not None:
            # Lambda's poller reads and deletes the messages with the consuming function's role.
            with running_as(self.services.get(consumer.function_name)):
                self._poll(queue_url, consumer)

    def _poll(self, queue_url: str, consumer: QueueConsumer) -> None:
        """One batch from the queue to its consumer, invoked synchronously as Lambda's poller does.

        Messages the consumer reports in ``batchItemFailures`` (or all of them, if it fails) stay in the
        queue; the others are deleted. Locally nobody polls again: a failed message waits in the queue.
        """
        assert self.sqs is not None
        sqs = self.sqs()
        received = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=consumer.batch_size,
            MessageAttributeNames=["All"],
            AttributeNames=["All"],
        ).get("Messages", [])
        if not received:
            return
        event = {"Records": [_sqs_record(message, consumer.queue_arn, self.region) for message in received]}
        payload, errored, _ = self._invoke_once(
            consumer.function_name, event, memory_mb=consumer.memory_mb, timeout_s=consumer.timeout_s
        )
        if errored:
            sys.stderr.write(f"{consumer.function_name} failed on its dead letters: {payload}\n")
            return
        answer = json.loads(payload)
        reported = answer.get("batchItemFailures", []) if consumer.reports_item_failures and answer else []
        failed = {item["itemIdentifier"] for item in reported}
        for message in received:
            if message["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    def dispatch(self, call: Callable[[], Any], label: str) -> None:
        """Run ``call`` on its own thread, as Lambda runs an asynchronous invocation."""
        with self._idle:
            self._inflight += 1

        def run() -> None:
            self._async.pending = True
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
        from moto.s3.models import S3Backend
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
        original_complete = S3Backend.__dict__["complete_multipart_upload"]
        original_notify = notifications._invoke_awslambda
        original_send_event = notifications.send_event
        original_s3_event = notifications._get_s3_event

        def invoke(function: Any, body: str, request_headers: Any, response_headers: Any) -> str | bytes:
            asynchronous = request_headers.get("x-amz-invocation-type") == "Event"
            size = len(body.encode() if isinstance(body, str) else body or b"")
            refusal = request_too_large(size, asynchronous=asynchronous)
            if refusal is not None:
                raise _request_entity_too_large(refusal)
            if not asynchronous:
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

        completion = notifications.S3NotificationEvent.OBJECT_CREATED_COMPLETE_MULTIPART_UPLOAD_EVENT

        def send_event(account_id: str, event_name: Any, bucket: Any, key: Any) -> None:
            if hook._s3_requests.completing_multipart and event_name != completion:
                return
            hook._s3_requests.defer(lambda: original_send_event(account_id, event_name, bucket, key))

        def complete_multipart_upload(backend: Any, *args: Any, **kwargs: Any) -> Any:
            with hook._s3_requests.multipart_completion():
                return original_complete(backend, *args, **kwargs)

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
            (S3Backend, "complete_multipart_upload", complete_multipart_upload),
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


@dataclass(frozen=True)
class QueueConsumer:
    """A function that an event source mapping feeds with a queue's messages."""

    function_name: str
    queue_arn: str
    batch_size: int = 10
    # FunctionResponseTypes ReportBatchItemFailures: without it, a batch succeeds or fails as a whole.
    reports_item_failures: bool = False
    memory_mb: int = DEFAULT_MEMORY_MB
    timeout_s: int = DEFAULT_TIMEOUT_S


def _sqs_record(message: Mapping[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """A message as Lambda hands it to a function: camel-cased names, attribute values as strings."""
    attributes = {
        name: {
            "stringValue": value.get("StringValue"),
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": value["DataType"],
        }
        for name, value in message.get("MessageAttributes", {}).items()
    }
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": attributes,
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


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

    @property
    def completing_multipart(self) -> bool:
        """This thread is inside moto's completion of a multipart upload."""
        return bool(getattr(self._local, "completing", False))

    @contextmanager
    def multipart_completion(self) -> Iterator[None]:
        self._local.completing = True
        try:
            yield
        finally:
            self._local.completing = False

    def defer(self, send: Callable[[], None]) -> None:
        if getattr(self._local, "depth", 0):
            self._local.deferred.append(send)
        else:
            send()


def _request_entity_too_large(message: str) -> Exception:
    """Lambda's 413 answer to an invocation request over its payload quota."""
    from moto.core.exceptions import JsonRESTError

    error = JsonRESTError("RequestEntityTooLargeException", message)
    error.code = 413
    return error


def _as_event(event: Any) -> Any:
    # moto hands over the request body already parsed, except on paths that pass the raw JSON string.
    if isinstance(event, (str, bytes)):
        try:
            return json.loads(event)
        except ValueError:
            return event
    return event
