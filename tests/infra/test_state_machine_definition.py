"""The artifact state machine: its states, error handling, and what each task reads and writes."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.records.datasets import DatasetRecord
from benchgen.records.runs import ArtifactStatus
from infra.constructs.pipeline import record_item

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
    assert set(definition["States"]) >= {
        "BuildArtifact",
        "ArtifactEmitted?",
        "RecordNoArtifact",
        "SaveDataset",
        "AlreadySaved",
        "LinkDataset",
        "EmitDatasetSaved",
        "Saved",
        "MarkArtifactFailed",
    }


def test_every_task_has_retry_and_catch(definition: Definition) -> None:
    tasks = _tasks(definition)
    assert len(tasks) == 6
    for name, state in tasks.items():
        assert state.get("Retry"), name
        assert state.get("Catch"), name


def test_definition_uses_jsonpath_only(definition: Definition) -> None:
    assert definition.get("QueryLanguage", "JSONPath") == "JSONPath"
    assert all(
        state.get("QueryLanguage", "JSONPath") == "JSONPath" for state in definition["States"].values()
    )


def test_build_artifact_invokes_the_function_and_keeps_its_answer_at_artifact(definition: Definition) -> None:
    state = definition["States"]["BuildArtifact"]
    assert state["Resource"] == "${BuildArtifactFunction.Arn}"
    assert state["ResultPath"] == "$.artifact"
    assert state["Next"] == "ArtifactEmitted?"


def test_build_artifact_retries_only_lambda_service_errors(definition: Definition) -> None:
    (retry,) = definition["States"]["BuildArtifact"]["Retry"]
    assert set(retry["ErrorEquals"]) == LAMBDA_SERVICE_ERRORS
    assert retry["IntervalSeconds"] <= 2


def test_any_failure_marks_the_artifact_failed_with_a_readable_reason(definition: Definition) -> None:
    # The function's error payload is parsed for its message; service errors carry a message already.
    readers = {"BuildArtifact": "ReadFunctionError"} | dict.fromkeys(
        ("RecordNoArtifact", "SaveDataset", "LinkDataset", "EmitDatasetSaved"), "ReadServiceError"
    )
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


def test_choice_saves_only_an_emitted_artifact(definition: Definition) -> None:
    choice = definition["States"]["ArtifactEmitted?"]
    assert choice["Type"] == "Choice"
    assert choice["Choices"] == [
        {
            "And": [
                {"Variable": "$.artifact.emitted", "IsPresent": True},
                {"Variable": "$.artifact.emitted", "BooleanEquals": True},
            ],
            "Next": "SaveDataset",
        }
    ]
    assert choice["Default"] == "RecordNoArtifact"


def test_no_artifact_records_the_reason_on_the_run_and_succeeds(definition: Definition) -> None:
    state = definition["States"]["RecordNoArtifact"]
    parameters = state["Parameters"]
    assert state["Resource"].endswith(":states:::dynamodb:updateItem")
    assert parameters["TableName"] == "${RunsTable}"
    assert parameters["Key"] == {"run_id": {"S.$": "$.run_id"}}
    assert parameters["ExpressionAttributeValues"] == {
        ":not_emitted": {"S": ArtifactStatus.NOT_EMITTED},
        ":reason": {"S.$": "$.artifact.reason"},
    }
    assert definition["States"][state["Next"]]["Type"] == "Succeed"


def test_save_dataset_writes_once_per_dataset(definition: Definition) -> None:
    state = definition["States"]["SaveDataset"]
    assert state["Resource"].endswith(":states:::dynamodb:putItem")
    assert state["Parameters"]["TableName"] == "${DatasetsTable}"
    assert state["Parameters"]["ConditionExpression"] == "attribute_not_exists(dataset_id)"
    assert state["ResultPath"] is None


def test_a_second_save_for_the_same_run_ends_in_already_saved(definition: Definition) -> None:
    state = definition["States"]["SaveDataset"]
    first = state["Catch"][0]
    assert first["ErrorEquals"] == ["DynamoDB.ConditionalCheckFailedException"]
    assert first["Next"] == "AlreadySaved"
    assert definition["States"]["AlreadySaved"]["Type"] == "Succeed"
    assert all("DynamoDB.ConditionalCheckFailedException" not in r["ErrorEquals"] for r in state["Retry"])


def test_save_dataset_writes_every_field_of_the_dataset_record_integers_as_numbers(
    definition: Definition,
) -> None:
    item = definition["States"]["SaveDataset"]["Parameters"]["Item"]
    fields = DatasetRecord.model_json_schema()["properties"]
    assert {name: list(value) for name, value in item.items()} == {
        name: ["N.$" if field["type"] == "integer" else "S.$"] for name, field in fields.items()
    }
    assert item["dataset_id"] == {"S.$": "$.artifact.dataset.dataset_id"}
    assert item["example_count"] == {"N.$": "$.artifact.dataset.example_count"}


class _DatasetWithMoreFields(DatasetRecord):
    shard_count: int
    split_seed: str


def test_a_field_added_to_the_record_is_written_by_save_dataset_with_its_type() -> None:
    item = {name: value.to_object() for name, value in record_item(_DatasetWithMoreFields, "$.d").items()}

    assert set(item) == set(DatasetRecord.model_fields) | {"shard_count", "split_seed"}
    assert list(item["shard_count"]) == ["N"]
    assert list(item["split_seed"]) == ["S"]


class _DatasetWithOptional(DatasetRecord):
    note: str | None = None


def test_a_record_field_the_state_machine_cannot_type_fails_synthesis_naming_it() -> None:
    with pytest.raises(TypeError, match=r"_DatasetWithOptional\.note is str \| None"):
        record_item(_DatasetWithOptional, "$.d")


def test_link_dataset_records_the_dataset_on_the_run(definition: Definition) -> None:
    state = definition["States"]["LinkDataset"]
    parameters = state["Parameters"]
    assert parameters["TableName"] == "${RunsTable}"
    assert parameters["UpdateExpression"] == (
        "SET dataset_id = :dataset_id, dataset_name = :dataset_name, artifact_status = :saved"
    )
    assert parameters["ExpressionAttributeValues"][":saved"] == {"S": ArtifactStatus.SAVED}
    assert state["Next"] == "EmitDatasetSaved"


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


def test_mark_artifact_failed_records_the_cause_then_fails(definition: Definition) -> None:
    state = definition["States"]["MarkArtifactFailed"]
    assert state["Parameters"]["ExpressionAttributeValues"] == {
        ":failed": {"S": ArtifactStatus.FAILED},
        ":reason": {"S.$": "$.failure.errorMessage"},
    }
    assert definition["States"][state["Next"]]["Type"] == "Fail"
    assert {definition["States"][c["Next"]]["Type"] for c in state["Catch"]} == {"Fail"}
