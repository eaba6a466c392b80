"""SQS: the dead-letter queues of register_environment, ingest and score. End what each lost event was for."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws.handlers import LambdaFunction
from benchgen.aws.s3_events import uploaded_objects
from benchgen.aws.wiring import adapters
from benchgen.steps.dead_letters import DeadLetter, settle_dead_letter

function = LambdaFunction("dead_letters", counts=True)


def _attribute(record: SQSRecord, name: str) -> str:
    value = record.message_attributes[name]  # None when absent
    return (value.string_value if value is not None else None) or "unknown"


def settle(record: SQSRecord) -> None:
    letter = DeadLetter(
        uploads=tuple(uploaded_objects(json.loads(record.body))),
        request_id=_attribute(record, "RequestID"),
        error_code=_attribute(record, "ErrorCode"),
        error_message=_attribute(record, "ErrorMessage"),
    )
    wired = adapters()
    done = settle_dead_letter(
        letter, runs=wired.runs, environments=wired.environments, publisher=wired.publisher
    )
    function.logger.info(
        "dead letter settled",
        extra={"message_id": record.message_id, "queue": record.event_source_arn, "done": done},
    )
    function.count("DeadLetterSettled")


@function.entry
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    # A message that fails (a throttled write, say) is reported back and stays in its queue for the
    # poller's next turn; the others are deleted, having left their reason on the run or version.
    return process_partial_response(
        event=event,
        record_handler=settle,
        processor=BatchProcessor(event_type=EventType.SQS),
        context=context,
    )
