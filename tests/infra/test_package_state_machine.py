"""The package state machine: its states, error handling, and what its role may do. It writes no record:
BuildPackage records the package, and records a caught failure too (one writer per record)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Resource = dict[str, Any]
Definition = dict[str, Any]

LAMBDA_SERVICE_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


def _tasks(definition: Definition) -> dict[str, Any]:
    return {name: state for name, state in definition["States"].items() if state["Type"] == "Task"}


def _catch_targets(state: dict[str, Any]) -> dict[str, str]:
    return {error: catcher["Next"] for catcher in state["Catch"] for error in catcher["ErrorEquals"]}


def test_the_package_pipeline_is_a_standard_state_machine_logged_in_full_and_traced(
    package_machine: Resource,
) -> None:
    properties = package_machine["Properties"]
    assert properties.get("StateMachineType", "STANDARD") == "STANDARD"
    assert properties["LoggingConfiguration"]["Level"] == "ALL"
    assert properties["LoggingConfiguration"]["IncludeExecutionData"] is True
    assert properties["TracingConfiguration"] == {"Enabled": True}


def test_states_are_named_as_in_the_contract(package_definition: Definition) -> None:
    assert package_definition["StartAt"] == "BuildPackage"
    assert set(package_definition["States"]) == {
        "BuildPackage",
        "Built?",
        "EmitPackageReady",
        "Ready",
        "Refused",
        "NoBuildAnswer",
        "ReadFunctionError",
        "ReadServiceError",
        "MarkPackageFailed",
        "PackageFailed",
    }


def test_every_task_has_retry_and_catch(package_definition: Definition) -> None:
    tasks = _tasks(package_definition)
    assert set(tasks) == {"BuildPackage", "EmitPackageReady", "MarkPackageFailed"}
    for name, state in tasks.items():
        assert state.get("Retry"), name
        assert state.get("Catch"), name


def test_build_invokes_the_function_keeps_its_answer_at_build_and_retries_only_service_errors(
    package_definition: Definition,
) -> None:
    state = package_definition["States"]["BuildPackage"]
    assert state["Resource"] == "${BuildPackageFunction.Arn}"
    assert state["ResultPath"] == "$.build"
    assert state["Next"] == "Built?"
    (retry,) = state["Retry"]
    assert set(retry["ErrorEquals"]) == LAMBDA_SERVICE_ERRORS
    assert retry["IntervalSeconds"] <= 2


def test_a_refusal_ends_the_execution_in_success_and_a_build_announces_the_package(
    package_definition: Definition,
) -> None:
    states = package_definition["States"]
    refused_branch, ready_branch = states["Built?"]["Choices"]
    assert refused_branch["Next"] == "Refused"
    assert {"Variable": "$.build.refused", "BooleanEquals": True} in refused_branch["And"]
    assert states["Refused"]["Type"] == "Succeed"
    assert ready_branch == {
        "Variable": "$.build.package.sha256",
        "IsPresent": True,
        "Next": "EmitPackageReady",
    }
    assert states["Built?"]["Default"] == "NoBuildAnswer"
    emit = states["EmitPackageReady"]
    (entry,) = emit["Parameters"]["Entries"]
    assert emit["Resource"].endswith(":states:::events:putEvents")
    assert entry["EventBusName"] == "${EventBus.Arn}"
    assert entry["Source"] == "benchgen"
    assert entry["DetailType"] == "PackageReady"
    assert entry["Detail"] == {
        "package_id.$": "$.package_id",
        "preparation_id.$": "$.preparation_id",
        "profile.$": "$.profile",
        "sha256.$": "$.build.package.sha256",
    }
    assert states[emit["Next"]]["Type"] == "Succeed"


def test_any_failure_has_the_build_function_record_the_package_failed_with_a_readable_reason(
    package_definition: Definition,
) -> None:
    states = package_definition["States"]
    readers = {"BuildPackage": "ReadFunctionError", "EmitPackageReady": "ReadServiceError"}
    for name, reader in readers.items():
        assert _catch_targets(states[name])["States.ALL"] == reader, name
        assert states[name]["Catch"][-1]["ResultPath"] == "$.error", name
        assert states[reader]["Next"] == "MarkPackageFailed", name
    assert _catch_targets(states["BuildPackage"])["States.Timeout"] == "ReadServiceError"
    assert states["NoBuildAnswer"]["Next"] == "MarkPackageFailed"
    assert states["ReadFunctionError"]["Parameters"]["failure.$"] == "States.StringToJson($.error.Cause)"
    mark = states["MarkPackageFailed"]
    assert mark["Resource"] == "${BuildPackageFunction.Arn}"
    assert mark["Parameters"] == {"failed": {"id.$": "$.package_id", "reason.$": "$.failure.errorMessage"}}
    assert states[mark["Next"]]["Type"] == "Fail"
    assert {states[c["Next"]]["Type"] for c in mark["Catch"]} == {"Fail"}


def test_the_state_machine_role_may_invoke_the_build_and_announce_nothing_else(
    package_machine: Resource,
    of_type: Callable[[str], dict[str, Resource]],
    render: Callable[[Any], str],
) -> None:
    role = package_machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    (policy,) = [
        p for p in of_type("AWS::IAM::Policy").values() if p["Properties"]["Roles"] == [{"Ref": role}]
    ]
    granted = set()
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        granted |= {(action, render(resource)) for action in actions for resource in resources}
    on_resources = {(action, resource) for action, resource in granted if resource != "*"}
    assert on_resources == {
        ("lambda:InvokeFunction", "${BuildPackageFunction.Arn}"),
        ("lambda:InvokeFunction", "${BuildPackageFunction.Arn}:*"),
        ("events:PutEvents", "${EventBus.Arn}"),
    }
    # what accepts no resource: log delivery and tracing, nothing that reaches data
    on_everything = {action for action, resource in granted if resource == "*"}
    assert {action.split(":")[0] for action in on_everything} == {"logs", "xray"}
