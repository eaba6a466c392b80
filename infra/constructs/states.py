"""The state-machine kit: what the seven state machines share, so each construct spells out only its states.

A state machine (`logged_state_machine`), its Lambda tasks (`lambda_task`) and event tasks (`put_event`), the
retries common to all (`Retry`, `guard`), the states a caught failure passes through (`error_readers`,
`record_failure`) and the Distributed Map that says its tolerated failures (`StrictDistributedMap`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from benchgen.step_inputs import FAILED
from infra.constructs import set_logical_id
from infra.constructs.events import EVENT_SOURCE

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
# Short intervals: an execution is short, and the local cloud really sleeps between attempts.
RETRY_INTERVAL = Duration.seconds(1)
RETRY_ATTEMPTS = 3


def logged_state_machine(
    scope: Construct,
    logical_id: str,
    start: sfn.IChainable,
    *,
    timeout: Duration | None,
    include_execution_data: bool = True,
    state_machine_name: str | None = None,
) -> sfn.StateMachine:
    """A traced Standard state machine from `start`, logging every event to a log group of its own.

    `logical_id` names it in the template and its log group `<logical_id>LogGroup`; each pipeline says
    its own timeout (None: no limit), and whether its execution data may be logged. `state_machine_name`
    fixes its name (and so its ARN), for a function it invokes to be told the ARN without referring to it.
    """
    log_group = logs.LogGroup(
        scope, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
    )
    set_logical_id(log_group, f"{logical_id}LogGroup")
    state_machine = sfn.StateMachine(
        scope,
        "StateMachine",
        state_machine_type=sfn.StateMachineType.STANDARD,
        definition_body=sfn.DefinitionBody.from_chainable(start),
        tracing_enabled=True,
        logs=sfn.LogOptions(
            destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=include_execution_data
        ),
        timeout=timeout,
        state_machine_name=state_machine_name,
    )
    set_logical_id(state_machine, logical_id)
    return state_machine


@dataclass(frozen=True)
class Retry:
    """A retrier: `errors` tried again `attempts` times, after `interval` and then twice as long each time."""

    errors: Sequence[str]
    interval: Duration = RETRY_INTERVAL
    attempts: int = RETRY_ATTEMPTS

    def add_to(self, state: sfn.TaskStateBase) -> None:
        state.add_retry(
            errors=list(self.errors), interval=self.interval, max_attempts=self.attempts, backoff_rate=2
        )


def guard(
    state: sfn.TaskStateBase, transient: list[str], on_error: sfn.IChainable, result_path: str = "$.error"
) -> None:
    """Retry the `transient` errors, then send any failure left to `on_error`, the error at `result_path`.

    A more specific Catch must be added before this one: Step Functions takes the first that matches."""
    Retry(transient).add_to(state)
    state.add_catch(on_error, errors=[sfn.Errors.ALL], result_path=result_path)


def lambda_task(
    scope: Construct,
    state_id: str,
    function: lambda_.IFunction,
    *,
    result_path: str,
    payload: dict[str, Any] | None = None,
    first_retry: Retry | None = None,
) -> tasks.LambdaInvoke:
    """A task that invokes `function` with `payload` (the state's input when None), keeps its answer (not
    Lambda's envelope) at `result_path`, and retries Lambda's service errors.

    `first_retry` is a task's own retry, matched before Lambda's: Step Functions tries its retriers in order.
    """
    task = tasks.LambdaInvoke(
        scope,
        state_id,
        lambda_function=function,
        payload=None if payload is None else sfn.TaskInput.from_object(payload),
        payload_response_only=True,
        # Not CDK's own retry of Lambda's service errors (6 times from 2 s): the common one below.
        retry_on_service_exceptions=False,
        result_path=result_path,
    )
    if first_retry is not None:
        first_retry.add_to(task)
    Retry(LAMBDA_SERVICE_ERRORS).add_to(task)
    return task


def paced_shards(
    scope: Construct,
    map_id: str,
    task_id: str,
    function: lambda_.IFunction,
    bucket: s3.IBucket,
    *,
    subject: str = "run_id",
) -> sfn.DistributedMap:
    """A Distributed Map over the items list a plan step wrote (its answer at ``$.plan``: ``items_key``,
    ``shards_at_once``), each item a Standard child execution invoking `function` with the item's
    `subject` (what the shard is of: ``run_id``, or a judging job's other subject), ``shard`` and its share
    of the bounds (``in_flight``, ``shards_at_once``); results discarded, as each shard leaves its file in
    S3."""
    shard = lambda_task(
        scope,
        task_id,
        function,
        payload={
            subject: sfn.JsonPath.string_at(f"$.{subject}"),
            "shard": sfn.JsonPath.number_at("$.shard"),
            "in_flight": sfn.JsonPath.number_at("$.in_flight"),
            "shards_at_once": sfn.JsonPath.number_at("$.shards_at_once"),
        },
        result_path=sfn.JsonPath.DISCARD,
    )
    shards = StrictDistributedMap(
        scope,
        map_id,
        item_reader=sfn.S3JsonItemReader(bucket=bucket, key=sfn.JsonPath.string_at("$.plan.items_key")),
        map_execution_type=sfn.StateMachineType.STANDARD,
        max_concurrency_path=sfn.JsonPath.string_at("$.plan.shards_at_once"),
        result_path=sfn.JsonPath.DISCARD,
    )
    shards.item_processor(shard)
    return shards


@dataclass(frozen=True)
class BatchLoop:
    """The states of a batch branch: its first, and the tasks a caught failure leaves from."""

    start: sfn.IChainable
    steps: tuple[tasks.LambdaInvoke, ...]


def batch_loop(
    scope: Construct,
    submit: lambda_.IFunction,
    poll: lambda_.IFunction,
    *,
    records_path: str,
    ended: sfn.IChainable,
    told: Mapping[str, Any] | None = None,
) -> BatchLoop:
    """SubmitBatch (`submit` handed the run, Plan's shard count and, at `records_path`, how many records
    go to the jobs) -> WaitForBatch -> PollBatch, looking again after every wait until the jobs have ended
    (the poll step fails the run once it has looked its most), then `ended`. Both steps are also handed
    `told` (whose records they are). The steps record on the run when they will look next, and the wait
    ends at that very moment."""
    run_id = {"run_id": sfn.JsonPath.string_at("$.run_id"), **(told or {})}
    submit_step = lambda_task(
        scope,
        "SubmitBatch",
        submit,
        payload={
            **run_id,
            "shard_count": sfn.JsonPath.number_at("$.plan.shard_count"),
            "cases": sfn.JsonPath.number_at(records_path),
        },
        result_path="$.batch",
    )
    wait = sfn.Wait(scope, "WaitForBatch", time=sfn.WaitTime.timestamp_path("$.batch.next_poll_at"))
    poll_step = lambda_task(
        scope,
        "PollBatch",
        poll,
        payload={**run_id, "polls": sfn.JsonPath.number_at("$.batch.polls")},
        result_path="$.batch",
    )
    done = (
        sfn.Choice(scope, "BatchEnded?")
        .when(sfn.Condition.boolean_equals("$.batch.done", True), ended)
        .otherwise(wait)
    )
    submit_step.next(wait).next(poll_step).next(done)
    return BatchLoop(start=submit_step, steps=(submit_step, poll_step))


def put_event(
    scope: Construct, state_id: str, bus: events.IEventBus, detail_type: str, detail: dict[str, Any]
) -> tasks.EventBridgePutEvents:
    """A task that puts one BenchGen event on `bus`, `detail` built from the execution's JSON, and passes
    its input on unchanged."""
    return tasks.EventBridgePutEvents(
        scope,
        state_id,
        entries=[
            tasks.EventBridgePutEventsEntry(
                event_bus=bus,
                source=EVENT_SOURCE,
                detail_type=detail_type,
                detail=sfn.TaskInput.from_object(detail),
            )
        ],
        result_path=sfn.JsonPath.DISCARD,
    )


@dataclass(frozen=True)
class ErrorReaders:
    """The states a caught failure passes through on its way to be recorded (see `error_readers`)."""

    function_error: sfn.Chain
    service_error: sfn.Chain

    def catch(self, state: sfn.TaskStateBase | sfn.DistributedMap) -> None:
        """Send a timeout to the service error's reader and any other failure to the function error's."""
        state.add_catch(self.service_error, errors=[sfn.Errors.TIMEOUT], result_path="$.error")
        state.add_catch(self.function_error, errors=[sfn.Errors.ALL], result_path="$.error")


def error_readers(
    scope: Construct, id_field: str, then: sfn.IChainable, *, prefix: str = "Read"
) -> ErrorReaders:
    """The states a caught failure passes through to `then`, keeping `id_field` and putting the failure's
    message at `$.failure.errorMessage`, for the record to show a sentence rather than an error document.

    `<prefix>FunctionError` reads a Lambda task's Cause, its error payload as JSON (errorMessage,
    errorType, stackTrace); `<prefix>ServiceError` a service task's or a timeout's, already a sentence.
    """
    keep = {f"{id_field}.$": f"$.{id_field}"}
    read_function_error = sfn.Pass(
        scope,
        f"{prefix}FunctionError",
        parameters={**keep, "failure.$": "States.StringToJson($.error.Cause)"},
    ).next(then)
    read_service_error = sfn.Pass(
        scope,
        f"{prefix}ServiceError",
        parameters={**keep, "failure": {"errorMessage.$": "$.error.Cause"}},
    ).next(then)
    return ErrorReaders(function_error=read_function_error, service_error=read_service_error)


def record_failure(
    scope: Construct,
    state_id: str,
    function: lambda_.IFunction,
    id_field: str,
    *,
    unrecorded: sfn.IChainable,
) -> tasks.LambdaInvoke:
    """A failure path's recording task: `function`, the one that writes the pipeline's record, records the
    failure's sentence (at ``$.failure.errorMessage``, where the error readers put it) on the record
    ``$.<id_field>`` names, through its table's module (``LambdaFunction.failure``); a failure it cannot
    record goes to `unrecorded`.

    Its answer is discarded, so the failure stays the state's output for whatever follows.
    """
    task = lambda_task(
        scope,
        state_id,
        function,
        payload={
            FAILED: {
                "id": sfn.JsonPath.string_at(f"$.{id_field}"),
                "reason": sfn.JsonPath.string_at("$.failure.errorMessage"),
            }
        },
        result_path=sfn.JsonPath.DISCARD,
    )
    task.add_catch(unrecorded, errors=[sfn.Errors.ALL], result_path="$.mark_failed_error")
    return task


class StrictDistributedMap(sfn.DistributedMap):
    """A Distributed Map that states its tolerated failure count even when it is 0: CDK leaves a 0 out, and
    the definition should say, not imply, that one failed item fails the execution."""

    def to_state_json(self, query_language: sfn.QueryLanguage | None = None) -> dict[str, Any]:
        return {**super().to_state_json(query_language), "ToleratedFailureCount": 0}
