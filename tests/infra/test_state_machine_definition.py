"""The artifact state machine: its states, error handling, and what each task is handed and answers.

It writes no record itself: BuildArtifact saves the dataset and records the run's artifact status, and
MarkArtifactFailed has the same function record a failure (one writer per record)."""

from __future__ import annotations

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


def test_the_pipeline_is_a_standard_state_machine(state_machine: Resource) -> None:
    assert state_machine["Properties"].get("StateMachineType", "STANDARD") == "STANDARD"


def test_executions_are_logged_in_full_and_traced(state_machine: Resource) -> None:
    properties = state_machine["Properties"]
    assert properties["LoggingConfiguration"]["Level"] == "ALL"
    assert properties["LoggingConfiguration"]["IncludeExecutionData"] is True
    assert properties["TracingConfiguration"] == {"Enabled": True}


def test_states_are_named_as_in_the_contract(definition: Definition) -> None:
    assert definition["StartAt"] == "BuildArtifact"
    assert set(definition["States"]) == {
        "BuildArtifact",
        "DatasetSaved?",
        "EmitDatasetSaved",
        "Saved",
        "AlreadySaved",
        "NoArtifact",
        "ReadFunctionError",
        "ReadServiceError",
        "MarkArtifactFailed",
        "ArtifactFailed",
    }


def test_every_task_has_retry_and_catch(definition: Definition) -> None:
    tasks = _tasks(definition)
    assert set(tasks) == {"BuildArtifact", "EmitDatasetSaved", "MarkArtifactFailed"}
    for name, state in tasks.items():
        assert state.get("Retry"), name
        assert state.get("Catch"), name


def test_no_state_writes_a_table(definition: Definition) -> None:
    resources = {state.get("Resource", "") for state in definition["States"].values()}
    assert not [resource for resource in resources if ":states:::dynamodb:" in resource]


def test_definition_uses_jsonpath_only(definition: Definition) -> None:
    assert definition.get("QueryLanguage", "JSONPath") == "JSONPath"
    assert all(
        state.get("QueryLanguage", "JSONPath") == "JSONPath" for state in definition["States"].values()
    )


def test_build_artifact_invokes_the_function_and_keeps_its_answer_at_artifact(definition: Definition) -> None:
    state = definition["States"]["BuildArtifact"]
    assert state["Resource"] == "${BuildArtifactFunction.Arn}"
    assert state["ResultPath"] == "$.artifact"
    assert state["Next"] == "DatasetSaved?"


def test_build_artifact_retries_only_lambda_service_errors(definition: Definition) -> None:
    (retry,) = definition["States"]["BuildArtifact"]["Retry"]
    assert set(retry["ErrorEquals"]) == LAMBDA_SERVICE_ERRORS
    assert retry["IntervalSeconds"] <= 2


def test_any_failure_marks_the_artifact_failed_with_a_readable_reason(definition: Definition) -> None:
    # The function's error payload is parsed for its message; service errors carry a message already.
    readers = {"BuildArtifact": "ReadFunctionError", "EmitDatasetSaved": "ReadServiceError"}
    for name, reader in readers.items():
        state = definition["States"][name]
        assert _catch_targets(state)["States.ALL"] == reader, name
        assert state["Catch"][-1]["ResultPath"] == "$.error", name
        assert definition["States"][reader]["Next"] == "MarkArtifactFailed", name
    assert _catch_targets(definition["States"]["BuildArtifact"])["States.Timeout"] == "ReadServiceError"
    assert definition["States"]["ReadFunctionError"]["Parameters"]["failure.$"] == (
        "States.StringToJson($.error.Cause)"
    )
    assert definition["States"]["ReadServiceError"]["Parameters"]["failure"] == {
        "errorMessage.$": "$.error.Cause"
    }


def test_choice_announces_only_a_dataset_this_execution_saved(definition: Definition) -> None:
    choice = definition["States"]["DatasetSaved?"]
    assert choice["Type"] == "Choice"
    assert choice["Choices"] == [
        {
            "And": [
                {"Variable": f"$.artifact.{field}", "IsPresent": True},
                {"Variable": f"$.artifact.{field}", "BooleanEquals": True},
            ],
            "Next": target,
        }
        for field, target in (("saved", "EmitDatasetSaved"), ("emitted", "AlreadySaved"))
    ]
    assert choice["Default"] == "NoArtifact"
    for end in ("AlreadySaved", "NoArtifact"):
        assert definition["States"][end]["Type"] == "Succeed"


def test_dataset_saved_event_goes_to_the_benchgen_bus(definition: Definition) -> None:
    state = definition["States"]["EmitDatasetSaved"]
    (entry,) = state["Parameters"]["Entries"]
    assert state["Resource"].endswith(":states:::events:putEvents")
    assert entry["EventBusName"] == "${EventBus.Arn}"
    assert entry["Source"] == "benchgen"
    assert entry["DetailType"] == "DatasetSaved"
    assert entry["Detail"] == {
        "dataset_id.$": "$.artifact.dataset.dataset_id",
        "run_id.$": "$.run_id",
        "name.$": "$.artifact.dataset.name",
    }
    assert state["Next"] == "Saved"
    assert definition["States"]["Saved"]["Type"] == "Succeed"


def test_mark_artifact_failed_has_the_artifact_function_record_the_cause_then_fails(
    definition: Definition,
) -> None:
    state = definition["States"]["MarkArtifactFailed"]
    assert state["Resource"] == "${BuildArtifactFunction.Arn}"
    assert state["Parameters"] == {"failed": {"id.$": "$.run_id", "reason.$": "$.failure.errorMessage"}}
    assert state["ResultPath"] is None
    (retry,) = state["Retry"]
    assert set(retry["ErrorEquals"]) == LAMBDA_SERVICE_ERRORS
    assert definition["States"][state["Next"]]["Type"] == "Fail"
    assert {definition["States"][c["Next"]]["Type"] for c in state["Catch"]} == {"Fail"}
