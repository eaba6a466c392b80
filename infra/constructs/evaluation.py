"""The EvaluationPipeline: a Standard state machine that compares a trained model with its base.

Start (create or reuse both live runs, restricted to the package's held-out cases, and start them) ->
FirstCheck -> Wait (seconds from the execution's input, which the API sets from its deploy-time setting)
-> Check -> Finished? (no: Wait again; the Check step fails the evaluation after the input's number of
checks) -> Compare (the report, and the evaluation recorded Completed) -> EmitEvaluationCompleted. Any
failure has Compare's function mark the evaluation Failed with the step's sentence (one writer per
record), then emits EvaluationFailed. Lambda tasks only, so it runs unchanged on AWS and in the local
cloud.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra.constructs.states import (
    EVENTBRIDGE_TRANSIENT_ERRORS,
    error_readers,
    guard,
    lambda_task,
    logged_state_machine,
    put_event,
    record_failure,
)

EVALUATION_COMPLETED = "EvaluationCompleted"
EVALUATION_FAILED = "EvaluationFailed"
_COMPARE = "$.compare"


class EvaluationPipeline(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        start: lambda_.IFunction,
        check: lambda_.IFunction,
        compare: lambda_.IFunction,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)
        evaluation_id = sfn.JsonPath.string_at("$.evaluation_id")

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
        # Compare, which records the evaluation Completed, records its failure too; only while it is still
        # Running: an evaluation that left it is not announced as failed.
        mark_failed = record_failure(
            self, "MarkEvaluationFailed", compare, "evaluation_id", unrecorded=failed
        )
        mark_failed.next(emit_failed)
        readers = error_readers(self, "evaluation_id", mark_failed)

        def step(
            name: str, function: lambda_.IFunction, payload: dict[str, object], result: str
        ) -> sfn.TaskStateBase:
            task = lambda_task(self, name, function, payload=payload, result_path=result)
            readers.catch(task)
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
        emit_completed = emit(
            "EmitEvaluationCompleted",
            EVALUATION_COMPLETED,
            {"verdict": sfn.JsonPath.string_at(f"{_COMPARE}.verdict")},
        )
        guard(emit_completed, EVENTBRIDGE_TRANSIENT_ERRORS, readers.service_error)

        finished = (
            sfn.Choice(self, "Finished?")
            .when(
                sfn.Condition.and_(
                    sfn.Condition.is_present("$.check.finished"),
                    sfn.Condition.boolean_equals("$.check.finished", True),
                ),
                compare_step.next(emit_completed).next(sfn.Succeed(self, "Compared")),
            )
            .otherwise(wait)
        )
        definition = start_step.next(first_check).next(wait).next(check_step).next(finished)

        self.state_machine = logged_state_machine(
            self,
            "EvaluationPipeline",
            definition,
            # 12 hours of checks (an on-demand run's time: an evaluation asks its models on demand),
            # and the comparison after them.
            timeout=Duration.hours(13),
        )
