"""The EvaluationPipeline state machine: its steps, the bounded wait, the record it writes, and failures."""

from __future__ import annotations

import json
from typing import Any

from benchgen.records.evaluations import EvaluationRecord
from infra.constructs.evaluation import RECORD_NAMES
from infra.deployed import render as render_value

Definition = dict[str, Any]


def _definition(resources: dict[str, Any]) -> Definition:
    parsed: Definition = json.loads(
        render_value(resources["EvaluationPipeline"]["Properties"]["DefinitionString"])
    )
    return parsed


def test_an_evaluation_starts_waits_checks_compares_records_and_emits(resources: dict[str, Any]) -> None:
    states = _definition(resources)["States"]
    assert _definition(resources)["StartAt"] == "Start"
    assert [states[name]["Next"] for name in ("Start", "FirstCheck", "Wait", "Check")] == [
        "FirstCheck",
        "Wait",
        "Check",
        "Finished?",
    ]
    assert states["Finished?"]["Default"] == "Wait"
    assert states["Finished?"]["Choices"][0]["Next"] == "Compare"
    assert [states[name]["Next"] for name in ("Compare", "RecordCompleted", "EmitEvaluationCompleted")] == [
        "RecordCompleted",
        "EmitEvaluationCompleted",
        "Compared",
    ]
    emitted = states["EmitEvaluationCompleted"]["Parameters"]["Entries"][0]
    assert emitted["DetailType"] == "EvaluationCompleted"


def test_the_wait_comes_from_the_input_and_the_check_is_told_how_many_checks_it_has(
    resources: dict[str, Any],
) -> None:
    states = _definition(resources)["States"]
    assert states["Wait"]["SecondsPath"] == "$.wait_seconds"
    assert states["FirstCheck"]["Result"] == {"finished": False, "polls": 0}
    assert states["Check"]["Parameters"] == {
        "evaluation_id.$": "$.evaluation_id",
        "polls.$": "$.check.polls",
        "max_checks.$": "$.max_checks",
    }


def test_every_step_failure_marks_the_evaluation_failed_and_emits_evaluation_failed(
    resources: dict[str, Any],
) -> None:
    states = _definition(resources)["States"]
    for name in ("Start", "Check", "Compare"):
        targets = {error: c["Next"] for c in states[name]["Catch"] for error in c["ErrorEquals"]}
        assert targets == {"States.Timeout": "ReadServiceError", "States.ALL": "ReadFunctionError"}, name
    mark = states["MarkEvaluationFailed"]
    assert mark["Parameters"]["ConditionExpression"] == "#status = :running"
    assert mark["Next"] == "EmitEvaluationFailed"
    assert states["EmitEvaluationFailed"]["Parameters"]["Entries"][0]["DetailType"] == "EvaluationFailed"


def test_the_record_writes_only_fields_the_evaluation_record_has(resources: dict[str, Any]) -> None:
    states = _definition(resources)["States"]
    written = set(states["RecordCompleted"]["Parameters"]["ExpressionAttributeNames"].values())
    assert written <= set(EvaluationRecord.model_fields)
    assert set(RECORD_NAMES.values()) <= set(EvaluationRecord.model_fields)
    assert {"verdict", "accuracy_before", "accuracy_after", "report_key", "report_html_key"} <= written
