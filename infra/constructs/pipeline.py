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
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra.constructs import error_readers, logged_state_machine, record_failure
from infra.constructs.events import put_event

LAMBDA_SERVICE_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]
EVENTBRIDGE_TRANSIENT_ERRORS = [
    "EventBridge.InternalException",
    "EventBridge.ThrottlingException",
    "EventBridge.FailedEntry",
]

_DATASET = "$.artifact.dataset"
# Short intervals: an execution is short, and the local cloud really sleeps between attempts.
_RETRY_INTERVAL = Duration.seconds(1)
_RETRY_ATTEMPTS = 3


def _guard(
    task: sfn.TaskStateBase, transient: list[str], on_error: sfn.IChainable, result_path: str = "$.error"
) -> None:
    """Retry the `transient` errors, then send any failure left to `on_error`, the error at `result_path`.

    A more specific Catch must be added before this one: Step Functions takes the first that matches."""
    task.add_retry(errors=transient, interval=_RETRY_INTERVAL, max_attempts=_RETRY_ATTEMPTS, backoff_rate=2)
    task.add_catch(on_error, errors=[sfn.Errors.ALL], result_path=result_path)


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
        mark_failed = record_failure(self, "MarkArtifactFailed", build_artifact, "run_id")
        _guard(mark_failed, LAMBDA_SERVICE_ERRORS, failed, result_path="$.mark_failed_error")
        mark_failed.next(failed)
        read_function_error, read_service_error = error_readers(self, "run_id", mark_failed)

        build = tasks.LambdaInvoke(
            self,
            "BuildArtifact",
            lambda_function=build_artifact,
            payload_response_only=True,
            retry_on_service_exceptions=False,
            result_path="$.artifact",
        )
        build.add_catch(read_service_error, errors=[sfn.Errors.TIMEOUT], result_path="$.error")
        _guard(build, LAMBDA_SERVICE_ERRORS, read_function_error)

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
        _guard(emit, EVENTBRIDGE_TRANSIENT_ERRORS, read_service_error)
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
