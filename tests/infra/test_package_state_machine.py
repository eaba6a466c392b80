"""The package state machine: its states, error handling, what it writes, and what its role may do."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from benchgen.records.packages import PackageRecord, PackageStatus

Resource = dict[str, Any]
Definition = dict[str, Any]

LAMBDA_SERVICE_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}
UPDATES = ("RecordReady", "RecordRefused", "MarkPackageFailed")


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
        "RecordReady",
        "EmitPackageReady",
        "Ready",
        "RecordRefused",
        "Refused",
        "NoBuildAnswer",
        "ReadFunctionError",
        "ReadServiceError",
        "MarkPackageFailed",
        "PackageFailed",
    }


def test_every_task_has_retry_and_catch(package_definition: Definition) -> None:
    tasks = _tasks(package_definition)
    assert set(tasks) == {
        "BuildPackage",
        "RecordReady",
        "RecordRefused",
        "EmitPackageReady",
        "MarkPackageFailed",
    }
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


def test_a_refusal_is_recorded_as_refused_and_the_execution_succeeds(package_definition: Definition) -> None:
    states = package_definition["States"]
    refused_branch, ready_branch = states["Built?"]["Choices"]
    assert refused_branch["Next"] == "RecordRefused"
    assert {"Variable": "$.build.refused", "BooleanEquals": True} in refused_branch["And"]
    assert ready_branch["Next"] == "RecordReady"
    assert states["Built?"]["Default"] == "NoBuildAnswer"
    parameters = states["RecordRefused"]["Parameters"]
    assert parameters["ExpressionAttributeValues"][":refused"] == {"S": PackageStatus.REFUSED.value}
    assert parameters["ExpressionAttributeValues"][":reason"] == {"S.$": "$.build.reason"}
    assert parameters["UpdateExpression"] == "SET #status = :refused, #reason = :reason"
    assert states[states["RecordRefused"]["Next"]]["Type"] == "Succeed"


def test_ready_records_the_digest_size_and_files_then_announces_the_package(
    package_definition: Definition,
) -> None:
    states = package_definition["States"]
    values = states["RecordReady"]["Parameters"]["ExpressionAttributeValues"]
    assert values == {
        ":building": {"S": "Building"},
        ":ready": {"S": "Ready"},
        ":sha256": {"S.$": "$.build.package.sha256"},
        ":size": {"N.$": "$.build.package.size"},
        ":files": {"M.$": "$.build.package.files"},
    }
    assert states["RecordReady"]["Next"] == "EmitPackageReady"
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


def test_each_update_writes_only_a_package_still_building_and_only_fields_of_its_record(
    package_definition: Definition,
) -> None:
    for name in UPDATES:
        state = package_definition["States"][name]
        parameters = state["Parameters"]
        assert state["Resource"].endswith(":states:::dynamodb:updateItem"), name
        assert parameters["TableName"] == "${PackagesTable}", name
        assert parameters["Key"] == {"package_id": {"S.$": "$.package_id"}}, name
        assert parameters["ConditionExpression"] == "#status = :building", name
        # every name the update sets is a field of the record the API reads back
        fields = set(parameters["ExpressionAttributeNames"].values())
        assert fields <= set(PackageRecord.model_fields), name
        placeholders = set(
            re.findall(r"#\w+", parameters["UpdateExpression"] + parameters["ConditionExpression"])
        )
        assert placeholders == set(parameters["ExpressionAttributeNames"]), name
        statuses = {value["S"] for value in parameters["ExpressionAttributeValues"].values() if "S" in value}
        assert statuses <= {status.value for status in PackageStatus}, name


def test_any_failure_marks_the_package_failed_with_a_readable_reason(package_definition: Definition) -> None:
    states = package_definition["States"]
    readers = {"BuildPackage": "ReadFunctionError"} | dict.fromkeys(
        ("RecordReady", "RecordRefused", "EmitPackageReady"), "ReadServiceError"
    )
    for name, reader in readers.items():
        assert _catch_targets(states[name])["States.ALL"] == reader, name
        assert states[name]["Catch"][-1]["ResultPath"] == "$.error", name
        assert states[reader]["Next"] == "MarkPackageFailed", name
    assert _catch_targets(states["BuildPackage"])["States.Timeout"] == "ReadServiceError"
    assert states["NoBuildAnswer"]["Next"] == "MarkPackageFailed"
    assert states["ReadFunctionError"]["Parameters"]["failure.$"] == "States.StringToJson($.error.Cause)"
    mark = states["MarkPackageFailed"]
    assert mark["Parameters"]["ExpressionAttributeValues"][":failed"] == {"S": PackageStatus.FAILED.value}
    assert mark["Parameters"]["ExpressionAttributeValues"][":reason"] == {"S.$": "$.failure.errorMessage"}
    assert states[mark["Next"]]["Type"] == "Fail"
    assert {states[c["Next"]]["Type"] for c in mark["Catch"]} == {"Fail"}


def test_the_state_machine_role_may_invoke_the_build_update_packages_and_announce_nothing_else(
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
        (
            "dynamodb:UpdateItem",
            "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${PackagesTable}",
        ),
        ("events:PutEvents", "${EventBus.Arn}"),
    }
    # what accepts no resource: log delivery and tracing, nothing that reaches data
    on_everything = {action for action, resource in granted if resource == "*"}
    assert {action.split(":")[0] for action in on_everything} == {"logs", "xray"}
