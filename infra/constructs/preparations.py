"""The preparation pipeline: a Standard state machine that turns judged runs into inspected training material.

Generate -> Check -> Record -> EmitPreparationReady. The execution is named after the preparation id, so
a repeated start collides instead of preparing twice. Any failure marks the preparation Failed with the
sentence that caused it.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from benchgen.records import PreparationStatus
from benchgen.steps.preparation_record import RECORD_MAP_FIELDS, RECORD_NUMBER_FIELDS, RECORD_STRING_FIELDS
from infra.constructs import error_readers, logged_state_machine
from infra.constructs.events import put_event
from infra.constructs.pipeline import (
    DYNAMODB_TRANSIENT_ERRORS,
    EVENTBRIDGE_TRANSIENT_ERRORS,
    LAMBDA_SERVICE_ERRORS,
    _guard,
)

_GENERATED = "$.generated"
_RECORD = f"{_GENERATED}.record"
_FAILURE_MESSAGE = "$.failure.errorMessage"
# The time a state is entered, as Step Functions gives it: when the preparation ended.
_NOW = "$$.State.EnteredTime"


def _key() -> dict[str, tasks.DynamoAttributeValue]:
    return {
        "preparation_id": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at("$.preparation_id"))
    }


def _status(status: PreparationStatus) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.from_string(status.value)


def _record_values() -> dict[str, tasks.DynamoAttributeValue]:
    """The fields Generate and Check found, as the functions hand them over (see ``steps.prepare``)."""
    values = {
        f":{name}": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(f"{_RECORD}.{name}"))
        for name in RECORD_STRING_FIELDS
    }
    values.update(
        {
            f":{name}": tasks.DynamoAttributeValue.number_from_string(
                sfn.JsonPath.string_at(f"{_RECORD}.{name}")
            )
            for name in RECORD_NUMBER_FIELDS
        }
    )
    values.update(
        {
            f":{name}": tasks.DynamoAttributeValue.map_from_json_path(f"{_RECORD}.{name}")
            for name in RECORD_MAP_FIELDS
        }
    )
    values[":gap_count"] = tasks.DynamoAttributeValue.number_from_string(
        sfn.JsonPath.string_at("$.checked.gap_count")
    )
    values[":finished_at"] = tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(_NOW))
    values[":ready"] = _status(PreparationStatus.READY)
    values[":generating"] = _status(PreparationStatus.GENERATING)
    return values


def _record_expression() -> str:
    fields = (*RECORD_STRING_FIELDS, *RECORD_NUMBER_FIELDS, *RECORD_MAP_FIELDS, "gap_count", "finished_at")
    return "SET #status = :ready, " + ", ".join(f"{name} = :{name}" for name in fields)


class PreparationPipeline(Construct):
    """Generate -> Generated? -> Check -> Record -> EmitPreparationReady -> Ready.

    Generate's refusal (a request that cannot be prepared) -> ReadRefusal -> MarkPreparationFailed ->
    NotPrepared; any error -> MarkPreparationFailed -> PreparationFailed.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        generate: lambda_.IFunction,
        check: lambda_.IFunction,
        preparations_table: dynamodb.ITable,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)

        failed = sfn.Fail(
            self, "PreparationFailed", error="PreparationFailed", cause="The preparation could not be made"
        )
        mark_failed = tasks.DynamoUpdateItem(
            self,
            "MarkPreparationFailed",
            table=preparations_table,
            key=_key(),
            update_expression="SET #status = :failed, failure_reason = :reason, finished_at = :finished_at",
            # Only a preparation still being generated: the API may have failed it already.
            condition_expression="#status = :generating",
            expression_attribute_names={"#status": "status"},
            expression_attribute_values={
                ":failed": _status(PreparationStatus.FAILED),
                ":generating": _status(PreparationStatus.GENERATING),
                ":reason": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(_FAILURE_MESSAGE)),
                ":finished_at": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(_NOW)),
            },
            result_path=sfn.JsonPath.DISCARD,
        )
        _guard(mark_failed, DYNAMODB_TRANSIENT_ERRORS, failed, result_path="$.mark_failed_error")
        # A request that cannot be prepared (Generate's refusal) is the user's to fix, not an operator's:
        # the execution succeeds with the preparation Failed, and no alarm goes off.
        mark_failed.next(
            sfn.Choice(self, "Refused?")
            .when(sfn.Condition.is_present("$.refused"), sfn.Succeed(self, "NotPrepared"))
            .otherwise(failed)
        )
        read_refusal = sfn.Pass(
            self,
            "ReadRefusal",
            parameters={
                "preparation_id.$": "$.preparation_id",
                "refused": True,
                "failure": {"errorMessage.$": f"{_GENERATED}.refused"},
            },
        ).next(mark_failed)
        read_function_error, read_service_error = error_readers(
            self, "preparation_id", mark_failed, prefix="ReadPreparation"
        )

        def invoke(state_id: str, function: lambda_.IFunction, **options: object) -> tasks.LambdaInvoke:
            task = tasks.LambdaInvoke(
                self,
                state_id,
                lambda_function=function,
                payload_response_only=True,
                retry_on_service_exceptions=False,
                **options,  # type: ignore[arg-type]
            )
            task.add_catch(read_service_error, errors=[sfn.Errors.TIMEOUT], result_path="$.error")
            _guard(task, LAMBDA_SERVICE_ERRORS, read_function_error)
            return task

        generate_task = invoke("Generate", generate, result_path=_GENERATED)
        check_task = invoke(
            "Check",
            check,
            payload=sfn.TaskInput.from_object(
                {
                    "preparation_id": sfn.JsonPath.string_at("$.preparation_id"),
                    "scope": sfn.JsonPath.list_at(f"{_GENERATED}.scope"),
                }
            ),
            result_path="$.checked",
        )

        record = tasks.DynamoUpdateItem(
            self,
            "Record",
            table=preparations_table,
            key=_key(),
            update_expression=_record_expression(),
            condition_expression="#status = :generating",
            expression_attribute_names={"#status": "status"},
            expression_attribute_values=_record_values(),
            result_path=sfn.JsonPath.DISCARD,
        )
        _guard(record, DYNAMODB_TRANSIENT_ERRORS, read_service_error)

        emit = put_event(
            self,
            "EmitPreparationReady",
            bus,
            "PreparationReady",
            {
                "preparation_id": sfn.JsonPath.string_at("$.preparation_id"),
                "state_hash": sfn.JsonPath.string_at(f"{_RECORD}.state_hash"),
                "example_count": sfn.JsonPath.number_at(f"{_GENERATED}.example_count"),
            },
        )
        _guard(emit, EVENTBRIDGE_TRANSIENT_ERRORS, read_service_error)

        generated = (
            sfn.Choice(self, "Generated?")
            .when(sfn.Condition.is_present(f"{_GENERATED}.refused"), read_refusal)
            .otherwise(check_task.next(record).next(emit).next(sfn.Succeed(self, "Ready")))
        )
        definition = generate_task.next(generated)
        self.state_machine = logged_state_machine(
            self,
            "PreparationPipeline",
            definition,
            # Generate (10 minutes at most) and Check (5), each retried on Lambda's own errors.
            timeout=Duration.hours(1),
        )
