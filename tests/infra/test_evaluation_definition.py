"""The EvaluationPipeline state machine: its steps, the bounded wait, and failures. It writes no record:
Compare records the evaluation Completed, and a caught failure too (one writer per record)."""

from __future__ import annotations

import json
from typing import Any

from infra.references import render as render_value

Definition = dict[str, Any]


def _definition(resources: dict[str, Any]) -> Definition:
    parsed: Definition = json.loads(
        render_value(resources["EvaluationPipeline"]["Properties"]["DefinitionString"])
    )
    return parsed


def test_an_evaluation_starts_waits_checks_compares_and_emits(resources: dict[str, Any]) -> None:
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
    assert [states[name]["Next"] for name in ("Compare", "EmitEvaluationCompleted")] == [
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
    assert mark["Resource"] == "${CompareEvaluationFunction.Arn}"
    assert mark["Parameters"] == {"failed": {"id.$": "$.evaluation_id", "reason.$": "$.failure.errorMessage"}}
    assert mark["Next"] == "EmitEvaluationFailed"
    # a failure that cannot be recorded (the evaluation left Running) is not announced
    assert {states[c["Next"]]["Type"] for c in mark["Catch"]} == {"Fail"}
    assert states["EmitEvaluationFailed"]["Parameters"]["Entries"][0]["DetailType"] == "EvaluationFailed"


def test_no_state_writes_a_table(resources: dict[str, Any]) -> None:
    states = _definition(resources)["States"]
    assert not [name for name, state in states.items() if ":states:::dynamodb:" in state.get("Resource", "")]
