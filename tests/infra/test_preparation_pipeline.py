"""The preparation state machine: its states, what each task is handed, and who may start it. It writes
no record: Check records the preparation Ready, and records a caught failure too (one writer per record)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

Resource = dict[str, Any]
Definition = dict[str, Any]

LAMBDA_SERVICE_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


@pytest.fixture(scope="module")
def machine(resources: dict[str, Resource]) -> Resource:
    return resources["PreparationPipeline"]


@pytest.fixture(scope="module")
def states(machine: Resource, render: Callable[[Any], str]) -> dict[str, Any]:
    definition: Definition = json.loads(render(machine["Properties"]["DefinitionString"]))
    assert definition["StartAt"] == "Generate"
    found: dict[str, Any] = definition["States"]
    return found


def _catches(state: dict[str, Any]) -> dict[str, str]:
    return {error: catcher["Next"] for catcher in state["Catch"] for error in catcher["ErrorEquals"]}


def test_it_is_a_standard_state_machine_logged_in_full_and_traced(machine: Resource) -> None:
    properties = machine["Properties"]
    assert properties.get("StateMachineType", "STANDARD") == "STANDARD"
    assert properties["LoggingConfiguration"]["Level"] == "ALL"
    assert properties["TracingConfiguration"] == {"Enabled": True}


def test_generate_check_and_announce_in_that_order(states: dict[str, Any]) -> None:
    assert states["Generate"]["Next"] == "Generated?"
    choice = states["Generated?"]
    (refused,) = choice["Choices"]
    assert refused == {"Variable": "$.generated.refused", "IsPresent": True, "Next": "ReadRefusal"}
    assert choice["Default"] == "Check"
    assert states["Check"]["Next"] == "EmitPreparationReady"
    assert states["EmitPreparationReady"]["Next"] == "Ready"
    assert states["Ready"]["Type"] == "Succeed"


def test_no_state_writes_a_table(states: dict[str, Any]) -> None:
    assert not [name for name, state in states.items() if ":states:::dynamodb:" in state.get("Resource", "")]


def test_the_functions_are_invoked_with_what_they_read(
    states: dict[str, Any], function_ids: dict[str, str]
) -> None:
    generate, check = states["Generate"], states["Check"]
    assert generate["Resource"] == f"${{{function_ids['prepare_generate']}.Arn}}"
    assert check["Resource"] == f"${{{function_ids['prepare_check']}.Arn}}"
    # Generate gets the whole input the API started it with; Check the id, the resolved scope and what
    # Generate found, which it records once the check passes
    assert "Parameters" not in generate and generate["ResultPath"] == "$.generated"
    assert check["Parameters"] == {
        "preparation_id.$": "$.preparation_id",
        "scope.$": "$.generated.scope",
        "report.$": "$.generated.report",
    }


@pytest.mark.parametrize("task", ["Generate", "Check"])
def test_function_tasks_retry_lambdas_own_errors_and_fail_the_preparation_on_any_other(
    states: dict[str, Any], task: str
) -> None:
    state = states[task]
    (retry,) = state["Retry"]
    assert set(retry["ErrorEquals"]) == LAMBDA_SERVICE_ERRORS
    assert retry["MaxAttempts"] == 3
    assert _catches(state) == {
        "States.Timeout": "ReadPreparationServiceError",
        "States.ALL": "ReadPreparationFunctionError",
    }


@pytest.mark.parametrize("task", ["EmitPreparationReady", "MarkPreparationFailed"])
def test_the_other_tasks_retry_their_transient_errors_and_catch_the_rest(
    states: dict[str, Any], task: str
) -> None:
    state = states[task]
    assert state["Retry"] and "States.ALL" not in state["Retry"][0]["ErrorEquals"]
    assert list(_catches(state)) == ["States.ALL"]


def test_the_ready_event_carries_the_id_state_hash_and_example_count(states: dict[str, Any]) -> None:
    (entry,) = states["EmitPreparationReady"]["Parameters"]["Entries"]
    assert entry["DetailType"] == "PreparationReady"
    assert entry["Source"] == "benchgen"
    assert entry["EventBusName"] == "${EventBus.Arn}"
    assert entry["Detail"] == {
        "preparation_id.$": "$.preparation_id",
        "state_hash.$": "$.generated.report.state_hash",
        "example_count.$": "$.generated.report.example_count",
    }


def test_a_failure_has_check_mark_the_preparation_failed_with_a_sentence(
    states: dict[str, Any], function_ids: dict[str, str]
) -> None:
    assert (
        states["ReadPreparationFunctionError"]["Parameters"]["failure.$"]
        == "States.StringToJson($.error.Cause)"
    )
    assert states["ReadPreparationServiceError"]["Parameters"]["failure"] == {
        "errorMessage.$": "$.error.Cause"
    }
    assert states["ReadRefusal"]["Parameters"]["failure"] == {"errorMessage.$": "$.generated.refused"}
    mark = states["MarkPreparationFailed"]
    assert mark["Resource"] == f"${{{function_ids['prepare_check']}.Arn}}"
    assert mark["Parameters"] == {
        "failed": {"id.$": "$.preparation_id", "reason.$": "$.failure.errorMessage"}
    }
    assert mark["ResultPath"] is None
    # a refusal is the user's to fix and ends the execution well; any other failure fails it (and alarms)
    (refused,) = states["Refused?"]["Choices"]
    assert (refused["Variable"], refused["Next"]) == ("$.refused", "NotPrepared")
    assert states["Refused?"]["Default"] == "PreparationFailed"
    assert states["PreparationFailed"]["Type"] == "Fail"


def test_only_the_api_is_told_the_preparation_pipeline_and_may_start_it(
    functions: dict[str, Resource], role_statements: dict[str, list[Any]]
) -> None:
    told = {
        name: f["Properties"]["Environment"]["Variables"]["PREPARATION_STATE_MACHINE_ARN"]
        for name, f in functions.items()
        if "PREPARATION_STATE_MACHINE_ARN" in f["Properties"]["Environment"]["Variables"]
    }
    assert told == {"api": {"Ref": "PreparationPipeline"}}
    starts = {
        name
        for name, statements in role_statements.items()
        for statement in statements
        if "states:StartExecution" in statement["Action"]
        and "${PreparationPipeline}" in statement["Resource"]
    }
    assert starts == {"api"}


def test_the_state_machine_writes_no_table_and_invokes_only_its_functions(
    of_type: Callable[[str], dict[str, Resource]], render: Callable[[Any], str], function_ids: dict[str, str]
) -> None:
    (role_id,) = [
        lid
        for lid, role in of_type("AWS::IAM::Role").items()
        if "states" in json.dumps(role["Properties"]["AssumeRolePolicyDocument"])
        and lid.startswith("PreparationsStateMachine")
    ]
    granted = {
        (action, render(resource))
        for policy in of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
        for resource in (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
    }
    assert not {action for action, _ in granted if action.startswith("dynamodb:")}
    invoked = {resource for action, resource in granted if action == "lambda:InvokeFunction"}
    ids = (function_ids["prepare_generate"], function_ids["prepare_check"])
    assert invoked == {f"${{{lid}.Arn}}" for lid in ids} | {f"${{{lid}.Arn}}:*" for lid in ids}
    assert {resource for action, resource in granted if action == "events:PutEvents"} == {"${EventBus.Arn}"}


def test_generate_has_room_for_a_100k_case_preparation(functions: dict[str, Resource]) -> None:
    properties = functions["prepare_generate"]["Properties"]
    assert (properties["MemorySize"], properties["Timeout"]) == (1769, 600)
    assert properties["EphemeralStorage"] == {"Size": 10240}
