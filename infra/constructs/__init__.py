"""One construct per concern of the BenchGen stack."""

from __future__ import annotations

from aws_cdk import CfnResource, Duration, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from benchgen.tasks import FAILED


def set_logical_id(construct: Construct, logical_id: str) -> None:
    """Give a construct's CloudFormation resource a readable, stable logical id.

    The local cloud and the infra tests find resources in the synthesized template by these ids, so they
    must not change when a construct moves in the tree.
    """
    child = construct.node.default_child
    if not isinstance(child, CfnResource):
        raise TypeError(f"{construct.node.path} has no CloudFormation resource to rename")
    child.override_logical_id(logical_id)


def logged_state_machine(
    scope: Construct,
    logical_id: str,
    start: sfn.IChainable,
    *,
    timeout: Duration | None,
    include_execution_data: bool = True,
) -> sfn.StateMachine:
    """A traced Standard state machine from `start`, logging every event to a log group of its own.

    `logical_id` names it in the template and its log group `<logical_id>LogGroup`; each pipeline says
    its own timeout (None: no limit), and whether its execution data may be logged.
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
    )
    set_logical_id(state_machine, logical_id)
    return state_machine


def error_readers(
    scope: Construct, id_field: str, then: sfn.IChainable, *, prefix: str = "Read"
) -> tuple[sfn.Chain, sfn.Chain]:
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
    return read_function_error, read_service_error


def record_failure(
    scope: Construct, state_id: str, function: lambda_.IFunction, id_field: str
) -> tasks.LambdaInvoke:
    """A failure path's recording task: `function`, the one that writes the pipeline's record, records the
    failure's sentence (at ``$.failure.errorMessage``, where the error readers put it) on the record
    ``$.<id_field>`` names, through its table's module (``LambdaFunction.failure``).

    Its answer is discarded, so the failure stays the state's output for whatever follows.
    """
    return tasks.LambdaInvoke(
        scope,
        state_id,
        lambda_function=function,
        payload=sfn.TaskInput.from_object(
            {
                FAILED: {
                    "id": sfn.JsonPath.string_at(f"$.{id_field}"),
                    "reason": sfn.JsonPath.string_at("$.failure.errorMessage"),
                }
            }
        ),
        payload_response_only=True,
        retry_on_service_exceptions=False,
        result_path=sfn.JsonPath.DISCARD,
    )
