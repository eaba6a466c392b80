"""The artifact pipeline: a Standard state machine that turns a scored run into a saved dataset.

BuildArtifact writes every record the pipeline changes (the run, the dataset) through the tables'
modules; the state machine branches on its answer, announces DatasetSaved, and on a failure has the same
function record it (see docs/decisions.md: one writer per record).
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

_DATASET = "$.artifact.dataset"


class Pipeline(Construct):
    """BuildArtifact -> DatasetSaved? -> EmitDatasetSaved -> Saved (or AlreadySaved, or NoArtifact)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        build_artifact: lambda_.IFunction,
        bus: events.IEventBus,
    ) -> None:
        super().__init__(scope, construct_id)
        failed = sfn.Fail(
            self, "ArtifactFailed", error="ArtifactFailed", cause="The finetune artifact step failed"
        )
        mark_failed = record_failure(self, "MarkArtifactFailed", build_artifact, "run_id", unrecorded=failed)
        mark_failed.next(failed)
        readers = error_readers(self, "run_id", mark_failed)

        build = lambda_task(self, "BuildArtifact", build_artifact, result_path="$.artifact")
        readers.catch(build)

        emit = put_event(
            self,
            "EmitDatasetSaved",
            bus,
            "DatasetSaved",
            {
                "dataset_id": sfn.JsonPath.string_at(f"{_DATASET}.dataset_id"),
                "run_id": sfn.JsonPath.string_at("$.run_id"),
                "name": sfn.JsonPath.string_at(f"{_DATASET}.name"),
            },
        )
        guard(emit, EVENTBRIDGE_TRANSIENT_ERRORS, readers.service_error)
        emit.next(sfn.Succeed(self, "Saved"))

        def answered(field: str) -> sfn.Condition:
            # A Choice has no Catch: an answer without the field must not fail the execution unmarked.
            return sfn.Condition.and_(
                sfn.Condition.is_present(f"$.artifact.{field}"),
                sfn.Condition.boolean_equals(f"$.artifact.{field}", True),
            )

        saved = (
            sfn.Choice(self, "DatasetSaved?")
            .when(answered("saved"), emit)
            # A dataset is saved once per run: a second execution for the same run ends here.
            .when(answered("emitted"), sfn.Succeed(self, "AlreadySaved"))
            .otherwise(sfn.Succeed(self, "NoArtifact"))
        )

        self.state_machine = logged_state_machine(
            self,
            "ArtifactPipeline",
            build.next(saved),
            timeout=Duration.hours(1),
        )
