"""The training pipeline: a Standard state machine that follows one provider training job to its end.

Lambda tasks only (no ``.sync`` service integrations), so the same definition runs on AWS and on the local
cloud. The API records the training run Queued and starts one execution named by its id, so a repeated
start collides. Validate -> Upload -> Start -> Ended? -> Wait -> Poll -> Ended? ... -> Emit; a job that
outlives its polls is stopped and recorded Failed ("timed out after ..."); any error is recorded as the
run's failure with its message, then announced like every other end.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from benchgen.steps.training import ProviderBusy
from infra.constructs.states import (
    EVENTBRIDGE_TRANSIENT_ERRORS,
    Retry,
    lambda_task,
    logged_state_machine,
    put_event,
)

# `cdk deploy -c benchgen:trainingPollSeconds=300 -c benchgen:trainingMaxPolls=576`: how often a job is
# looked at and for how many looks before the run times out. The defaults follow a job for 48 hours at
# one look every 5 minutes: about 5,200 history events, well inside a Standard execution's 25,000.
TRAINING_POLL_SECONDS = "benchgen:trainingPollSeconds"
TRAINING_MAX_POLLS = "benchgen:trainingMaxPolls"
# The first wait before a provider call that failed on a fault that may pass is tried again (then doubled).
TRAINING_RETRY_SECONDS = "benchgen:trainingRetrySeconds"
DEFAULT_POLL_SECONDS = 300
DEFAULT_MAX_POLLS = 576
DEFAULT_RETRY_SECONDS = 30
PROVIDER_RETRY_ATTEMPTS = 5
#: What the local cloud synthesizes with: seconds, not minutes (moto's Wait really sleeps).
LOCAL_TRAINING_CONTEXT = {TRAINING_POLL_SECONDS: 1, TRAINING_MAX_POLLS: 30, TRAINING_RETRY_SECONDS: 1}

_PROGRESS = "$.progress"


class TrainingPipeline(Construct):
    """Validate -> Upload -> Start -> (Wait -> Poll)* -> Emit<Training...>; TimeOut; RecordFailure."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        validate: lambda_.IFunction,
        upload: lambda_.IFunction,
        job: lambda_.IFunction,
        bus: events.IEventBus,
        poll_seconds: int = DEFAULT_POLL_SECONDS,
        max_polls: int = DEFAULT_MAX_POLLS,
        retry_seconds: int = DEFAULT_RETRY_SECONDS,
    ) -> None:
        super().__init__(scope, construct_id)
        self.poll_seconds = poll_seconds
        self.max_polls = max_polls
        run_id = sfn.JsonPath.string_at("$.training_run_id")

        # A provider that throttles or answers 5xx is asked again, waiting longer each time.
        provider_busy = Retry(
            [ProviderBusy.__name__],
            interval=Duration.seconds(retry_seconds),
            attempts=PROVIDER_RETRY_ATTEMPTS,
        )

        def invoke(
            state_id: str, function: lambda_.IFunction, payload: dict[str, object], result_path: str
        ) -> sfn.TaskStateBase:
            return lambda_task(
                self,
                state_id,
                function,
                payload={"training_run_id": run_id, **payload},
                result_path=result_path,
                first_retry=provider_busy,
            )

        emit = put_event(
            self,
            "EmitTrainingEnded",
            bus,
            # TrainingSucceeded, TrainingFailed or TrainingCancelled, as the Record step answered.
            sfn.JsonPath.string_at(f"{_PROGRESS}.event"),
            {
                "training_run_id": run_id,
                "status": sfn.JsonPath.string_at(f"{_PROGRESS}.status"),
                "job_id": sfn.JsonPath.string_at(f"{_PROGRESS}.job_id"),
                "result_model": sfn.JsonPath.string_at(f"{_PROGRESS}.result_model"),
            },
        )
        emit.add_retry(errors=EVENTBRIDGE_TRANSIENT_ERRORS, interval=Duration.seconds(1), max_attempts=3)
        emit.next(sfn.Succeed(self, "Recorded"))

        unrecorded = sfn.Fail(
            self,
            "TrainingPipelineFailed",
            error="TrainingPipelineFailed",
            cause="The failure could not be recorded",
        )
        record_failure = invoke(
            "RecordFailure", job, {"action": "fail", "error": sfn.JsonPath.object_at("$.error")}, _PROGRESS
        )
        record_failure.add_catch(unrecorded, errors=[sfn.Errors.ALL], result_path="$.record_error")
        record_failure.next(emit)

        validate_task = invoke("Validate", validate, {}, sfn.JsonPath.DISCARD)
        upload_task = invoke("Upload", upload, {}, "$.uploaded")
        uploaded = sfn.JsonPath.object_at("$.uploaded")
        start = invoke("Start", job, {"action": "start", "uploaded": uploaded}, _PROGRESS)
        poll = invoke(
            "Poll",
            job,
            {"action": "poll", "uploaded": uploaded, "polls": sfn.JsonPath.number_at(f"{_PROGRESS}.polls")},
            _PROGRESS,
        )
        time_out = invoke(
            "TimeOut",
            job,
            {
                "action": "time_out",
                "uploaded": uploaded,
                "polls": sfn.JsonPath.number_at(f"{_PROGRESS}.polls"),
                "poll_seconds": poll_seconds,
            },
            _PROGRESS,
        )
        for task in (validate_task, upload_task, start, poll, time_out):
            task.add_catch(record_failure, errors=[sfn.Errors.ALL], result_path="$.error")
        time_out.next(emit)

        wait = sfn.Wait(self, "Wait", time=sfn.WaitTime.duration(Duration.seconds(poll_seconds)))
        ended = (
            sfn.Choice(self, "Ended?")
            .when(sfn.Condition.boolean_equals(f"{_PROGRESS}.terminal", True), emit)
            .when(sfn.Condition.number_greater_than_equals(f"{_PROGRESS}.polls", max_polls), time_out)
            .otherwise(wait)
        )
        wait.next(poll)
        poll.next(ended)

        self.state_machine = logged_state_machine(
            self,
            "TrainingPipeline",
            validate_task.next(upload_task).next(start).next(ended),
            # Every poll and its wait, the retries of the last ones, and an hour for the steps around them.
            timeout=Duration.seconds(poll_seconds * max_polls + 3600),
        )
