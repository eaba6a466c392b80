"""Asynchronous Lambda invocations, as Lambda makes them: on their own thread, retried, then dead-lettered.

An S3 notification or an ``InvocationType=Event`` call returns at once and the handler runs on a thread of
its own. One that fails is delivered again, then sent to the function's dead-letter queue (see
``AsyncConfig``); a dead-letter queue that a function consumes (an event source mapping) hands it the
message as Lambda's poller would.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from localcloud.callers import running_as
from localcloud.lambda_runtime import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, as_event

# Lambda retries a failed asynchronous invocation twice unless the function's event invoke configuration
# says otherwise (MaximumRetryAttempts, 0-2).
DEFAULT_RETRY_ATTEMPTS = 2
# Lambda waits about 1 minute before the first retry and 2 minutes before the second; locally the same
# number of attempts comes after short waits, so that tests see the whole sequence in well under a second.
LOCAL_RETRY_DELAYS_S = (0.05, 0.1)


@dataclass(frozen=True)
class AsyncConfig:
    """How Lambda treats a function's failed asynchronous invocations.

    ``retry_attempts``: deliveries after the first (MaximumRetryAttempts). ``dead_letter_queue``: the URL
    of the queue the event goes to after the last one fails (the function's DeadLetterConfig), if any.
    """

    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    dead_letter_queue: str | None = None


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


class InvokeOnce(Protocol):
    """One delivery of an event to a function's handler: its payload, whether it is an error, its request
    id."""

    def __call__(
        self, function_name: str, event: Any, *, memory_mb: int, timeout_s: int, request_id: str | None = None
    ) -> tuple[str, bool, str]: ...


class AsyncInvocations:
    """The asynchronous invocations of the functions ``invoke_once`` delivers to.

    ``services`` maps a function to its folder, whose role it sends and reads dead letters with.
    """

    def __init__(self, invoke_once: InvokeOnce, services: Mapping[str, str], *, region: str) -> None:
        self._invoke_once = invoke_once
        self._services = services
        self._region = region
        self.configs: dict[str, AsyncConfig] = {}
        self.queue_consumers: dict[str, QueueConsumer] = {}
        self.retry_delays_s: tuple[float, ...] = LOCAL_RETRY_DELAYS_S
        # The dead-letter queues are moto SQS queues, reached through the cloud's client.
        self.sqs: Callable[[], Any] | None = None
        self._inflight = 0
        self._idle = threading.Condition()
        self._started = threading.local()

    def dispatch(self, call: Callable[[], Any], label: str) -> None:
        """Run ``call`` on its own thread, as Lambda runs an asynchronous invocation."""
        with self._idle:
            self._inflight += 1

        def run() -> None:
            self._started.pending = True
            try:
                call()
            except Exception:
                sys.stderr.write(f"asynchronous invocation {label} failed:\n{traceback.format_exc()}")
            finally:
                with self._idle:
                    self._inflight -= 1
                    self._idle.notify_all()

        threading.Thread(target=run, name=f"lambda-async-{label}", daemon=True).start()

    def take_pending(self) -> bool:
        """Whether this thread's next invocation is the one a dispatch started; only that one is
        asynchronous, not what its handler invokes in turn."""
        pending = bool(getattr(self._started, "pending", False))
        self._started.pending = False
        return pending

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no asynchronous invocation is running; False if some still were after ``timeout``."""
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout)

    @property
    def busy(self) -> bool:
        with self._idle:
            return self._inflight > 0

    def deliver(
        self, function_name: str, event: Any, *, memory_mb: int, timeout_s: int
    ) -> tuple[str, bool, str]:
        """Deliver the event until it succeeds or its retries run out, then dead-letter it, as Lambda does.

        Every attempt carries the same request id: Lambda keeps it across the retries of one event, and
        the dead-letter message names it.
        """
        config = self.configs.get(function_name, AsyncConfig())
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
            with running_as(self._services.get(function_name)):
                self._dead_letter(config.dead_letter_queue, event, request_id, payload)
        return payload, True, f"RequestId: {request_id}\n"

    def _dead_letter(self, queue_url: str, event: Any, request_id: str, payload: str) -> None:
        """Send the event to the queue with the attributes Lambda adds, then let its consumer have it.

        Lambda's dead-letter message is the event itself, with RequestID (String), ErrorCode (Number, the
        HTTP status of the invocation: 200 for an error of the function) and ErrorMessage (String, the
        error message's first 1 KB).
        """
        if self.sqs is None:
            raise RuntimeError("no SQS client to send dead letters with; set AsyncInvocations.sqs")
        error = json.loads(payload)
        message = str(error.get("errorMessage") or error.get("errorType") or "unknown error")
        self.sqs().send_message(
            QueueUrl=queue_url,
            MessageBody=json.dumps(as_event(event)),
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
            with running_as(self._services.get(consumer.function_name)):
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
        event = {"Records": [_sqs_record(message, consumer.queue_arn, self._region) for message in received]}
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
