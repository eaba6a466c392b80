"""The preparation pipeline: a Standard state machine that turns judged runs into inspected training material.

Generate -> Check -> EmitPreparationReady. The execution is named after the preparation id, so a
repeated start collides instead of preparing twice. Check records the preparation Ready; any failure has
the same function mark it Failed with the sentence that caused it (one writer per record).
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
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

_GENERATED = "$.generated"
_REPORT = f"{_GENERATED}.report"


class PreparationPipeline(Construct):
    """Generate -> Generated? -> Check -> EmitPreparationReady -> Ready.

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
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)

        failed = sfn.Fail(
            self, "PreparationFailed", error="PreparationFailed", cause="The preparation could not be made"
        )
        # Check, which records the preparation Ready, records its failure too; only while it is still
        # Generating (the API may have failed it already).
        mark_failed = record_failure(
            self, "MarkPreparationFailed", check, "preparation_id", unrecorded=failed
        )
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
        readers = error_readers(self, "preparation_id", mark_failed, prefix="ReadPreparation")

        generate_task = lambda_task(self, "Generate", generate, result_path=_GENERATED)
        check_task = lambda_task(
            self,
            "Check",
            check,
            payload={
                "preparation_id": sfn.JsonPath.string_at("$.preparation_id"),
                "scope": sfn.JsonPath.list_at(f"{_GENERATED}.scope"),
                "report": sfn.JsonPath.object_at(_REPORT),
            },
            result_path="$.checked",
        )
        for task in (generate_task, check_task):
            readers.catch(task)

        emit = put_event(
            self,
            "EmitPreparationReady",
            bus,
            "PreparationReady",
            {
                "preparation_id": sfn.JsonPath.string_at("$.preparation_id"),
                "state_hash": sfn.JsonPath.string_at(f"{_REPORT}.state_hash"),
                "example_count": sfn.JsonPath.number_at(f"{_REPORT}.example_count"),
            },
        )
        guard(emit, EVENTBRIDGE_TRANSIENT_ERRORS, readers.service_error)

        generated = (
            sfn.Choice(self, "Generated?")
            .when(sfn.Condition.is_present(f"{_GENERATED}.refused"), read_refusal)
            .otherwise(check_task.next(emit).next(sfn.Succeed(self, "Ready")))
        )
        definition = generate_task.next(generated)
        self.state_machine = logged_state_machine(
            self,
            "PreparationPipeline",
            definition,
            # Generate (10 minutes at most) and Check (5), each retried on Lambda's own errors.
            timeout=Duration.hours(1),
        )
