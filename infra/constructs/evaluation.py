"""The EvaluationPipeline: a Standard state machine that compares a trained model with its base.

Start (create or reuse both live runs, restricted to the package's held-out cases, and start them) ->
FirstCheck -> Wait (seconds from the execution's input, which the API sets from its deploy-time setting)
-> Check -> Finished? (no: Wait again; the Check step fails the evaluation after the input's number of
checks) -> Compare (the report) -> RecordCompleted -> EmitEvaluationCompleted. Any failure marks the
evaluation Failed with the step's sentence and emits EvaluationFailed. Lambda tasks only, so it runs
unchanged on AWS and in the local cloud.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from benchgen.records.evaluations import EvaluationStatus
from infra.constructs import error_readers, logged_state_machine
from infra.constructs.events import put_event
from infra.constructs.pipeline import (
    CONDITIONAL_CHECK_FAILED,
    DYNAMODB_TRANSIENT_ERRORS,
    EVENTBRIDGE_TRANSIENT_ERRORS,
    LAMBDA_SERVICE_ERRORS,
    _guard,
)

EVALUATION_COMPLETED = "EvaluationCompleted"
EVALUATION_FAILED = "EvaluationFailed"
_COMPARE = "$.compare"
# Fields of benchgen.records.evaluations.EvaluationRecord the state machine writes, by their attribute names.
RECORD_NAMES = {
    "#status": "status",
    "#verdict": "verdict",
    "#verdict_reason": "verdict_reason",
    "#accuracy_before": "accuracy_before",
    "#accuracy_after": "accuracy_after",
    "#paired_cases": "paired_cases",
    "#report_key": "report_key",
    "#report_html_key": "report_html_key",
    "#failure_reason": "failure_reason",
    "#finished_at": "finished_at",
}
_STILL_RUNNING = "#status = :running"
_COMPARE_STRINGS = ("verdict", "verdict_reason", "report_key", "report_html_key")
_COMPARE_NUMBERS = ("accuracy_before", "accuracy_after", "paired_cases")


def _string(value: str) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.from_string(value)


class EvaluationPipeline(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        start: lambda_.IFunction,
        check: lambda_.IFunction,
        compare: lambda_.IFunction,
        evaluations_table: dynamodb.ITable,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)
        evaluation_id = sfn.JsonPath.string_at("$.evaluation_id")

        def update(
            state_id: str, expression: str, values: dict[str, tasks.DynamoAttributeValue]
        ) -> tasks.DynamoUpdateItem:
            # Only an evaluation still Running is written: Completed and Failed are never left.
            names = {name: field for name, field in RECORD_NAMES.items() if name in expression}
            return tasks.DynamoUpdateItem(
                self,
                state_id,
                table=evaluations_table,
                key={"evaluation_id": _string(evaluation_id)},
                update_expression=expression,
                condition_expression=_STILL_RUNNING,
                expression_attribute_names=names,
                expression_attribute_values={":running": _string(EvaluationStatus.RUNNING.value), **values},
                result_path=sfn.JsonPath.DISCARD,
            )

        def emit(state_id: str, detail_type: str, detail: dict[str, str]) -> tasks.EventBridgePutEvents:
            return put_event(
                self,
                state_id,
                bus,
                detail_type,
                {"evaluation_id": evaluation_id, **detail},
            )

        failed = sfn.Fail(
            self, "EvaluationFailed", error=EVALUATION_FAILED, cause="An evaluation step failed"
        )
        emit_failed = emit(
            "EmitEvaluationFailed",
            EVALUATION_FAILED,
            {"reason": sfn.JsonPath.string_at("$.failure.errorMessage")},
        )
        emit_failed.add_retry(
            errors=EVENTBRIDGE_TRANSIENT_ERRORS, interval=Duration.seconds(1), max_attempts=3
        )
        emit_failed.add_catch(failed, errors=[sfn.Errors.ALL], result_path="$.emit_error")
        emit_failed.next(failed)
        mark_failed = update(
            "MarkEvaluationFailed",
            "SET #status = :failed, #failure_reason = :reason, #finished_at = :at",
            {
                ":failed": _string(EvaluationStatus.FAILED.value),
                ":reason": _string(sfn.JsonPath.string_at("$.failure.errorMessage")),
                ":at": _string(sfn.JsonPath.string_at("$$.State.EnteredTime")),
            },
        )
        mark_failed.add_catch(failed, errors=[CONDITIONAL_CHECK_FAILED], result_path="$.mark_failed_error")
        _guard(mark_failed, DYNAMODB_TRANSIENT_ERRORS, failed, result_path="$.mark_failed_error")
        mark_failed.next(emit_failed)
        read_function_error, read_service_error = error_readers(self, "evaluation_id", mark_failed)

        def step(
            name: str, function: lambda_.IFunction, payload: dict[str, object], result: str
        ) -> tasks.LambdaInvoke:
            task = tasks.LambdaInvoke(
                self,
                name,
                lambda_function=function,
                payload=sfn.TaskInput.from_object(payload),
                payload_response_only=True,
                retry_on_service_exceptions=False,
                result_path=result,
            )
            task.add_catch(read_service_error, errors=[sfn.Errors.TIMEOUT], result_path="$.error")
            _guard(task, LAMBDA_SERVICE_ERRORS, read_function_error)
            return task

        start_step = step("Start", start, {"evaluation_id": evaluation_id}, "$.start")
        first_check = sfn.Pass(
            self,
            "FirstCheck",
            result=sfn.Result.from_object({"finished": False, "polls": 0}),
            result_path="$.check",
        )
        wait = sfn.Wait(self, "Wait", time=sfn.WaitTime.seconds_path("$.wait_seconds"))
        check_step = step(
            "Check",
            check,
            {
                "evaluation_id": evaluation_id,
                "polls": sfn.JsonPath.number_at("$.check.polls"),
                "max_checks": sfn.JsonPath.number_at("$.max_checks"),
            },
            "$.check",
        )
        compare_step = step("Compare", compare, {"evaluation_id": evaluation_id}, _COMPARE)
        values = {
            f":{name}": _string(sfn.JsonPath.string_at(f"{_COMPARE}.{name}")) for name in _COMPARE_STRINGS
        }
        values.update(
            {
                f":{name}": tasks.DynamoAttributeValue.number_from_string(
                    sfn.JsonPath.string_at(f"{_COMPARE}.{name}")
                )
                for name in _COMPARE_NUMBERS
            }
        )
        record = update(
            "RecordCompleted",
            "SET #status = :completed, #finished_at = :at, "
            + ", ".join(f"#{name} = :{name}" for name in (*_COMPARE_STRINGS, *_COMPARE_NUMBERS)),
            {
                ":completed": _string(EvaluationStatus.COMPLETED.value),
                ":at": _string(sfn.JsonPath.string_at("$$.State.EnteredTime")),
                **values,
            },
        )
        _guard(record, DYNAMODB_TRANSIENT_ERRORS, read_service_error)
        emit_completed = emit(
            "EmitEvaluationCompleted",
            EVALUATION_COMPLETED,
            {"verdict": sfn.JsonPath.string_at(f"{_COMPARE}.verdict")},
        )
        _guard(emit_completed, EVENTBRIDGE_TRANSIENT_ERRORS, read_service_error)

        finished = (
            sfn.Choice(self, "Finished?")
            .when(
                sfn.Condition.and_(
                    sfn.Condition.is_present("$.check.finished"),
                    sfn.Condition.boolean_equals("$.check.finished", True),
                ),
                compare_step.next(record).next(emit_completed).next(sfn.Succeed(self, "Compared")),
            )
            .otherwise(wait)
        )
        definition = start_step.next(first_check).next(wait).next(check_step).next(finished)

        self.state_machine = logged_state_machine(
            self,
            "EvaluationPipeline",
            definition,
            # The runs' own limit (the InferencePipeline's 12 hours), and the comparison after them.
            timeout=Duration.hours(13),
        )
