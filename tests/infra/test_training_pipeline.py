"""The training state machine: Lambda tasks only, a bounded poll loop, retries of provider faults that may
pass, every failure recorded, one event at every end, and a role that reaches only its own functions."""

from __future__ import annotations

from typing import Any

import pytest

Resource = dict[str, Any]
Definition = dict[str, Any]

TASKS = ("Validate", "Upload", "Start", "Poll", "TimeOut")


@pytest.fixture
def definition(training_definition: Definition) -> Definition:
    return training_definition


def test_the_states_follow_the_job_to_its_end(definition: Definition) -> None:
    assert definition["StartAt"] == "Validate"
    states = definition["States"]
    assert [states[name]["Next"] for name in ("Validate", "Upload", "Start", "Wait", "Poll")] == [
        "Upload",
        "Start",
        "Ended?",
        "Poll",
        "Ended?",
    ]
    assert states["TimeOut"]["Next"] == "EmitTrainingEnded"
    assert states["RecordFailure"]["Next"] == "EmitTrainingEnded"
    assert states["EmitTrainingEnded"]["Next"] == "Recorded"


def test_every_task_is_a_lambda_invocation_so_it_runs_unchanged_on_aws_and_the_local_cloud(
    definition: Definition,
) -> None:
    tasks = {name: state for name, state in definition["States"].items() if state["Type"] == "Task"}
    resources = {name: state["Resource"] for name, state in tasks.items()}
    assert set(tasks) == {*TASKS, "RecordFailure", "EmitTrainingEnded"}
    # each Lambda task names its function directly (the payload is the answer), never a provider service
    assert {name: resources[name] for name in (*TASKS, "RecordFailure")} == {
        "Validate": "${ValidateTrainingFunction.Arn}",
        "Upload": "${UploadTrainingFunction.Arn}",
        "Start": "${TrainingJobFunction.Arn}",
        "Poll": "${TrainingJobFunction.Arn}",
        "TimeOut": "${TrainingJobFunction.Arn}",
        "RecordFailure": "${TrainingJobFunction.Arn}",
    }
    assert resources["EmitTrainingEnded"].endswith(":states:::events:putEvents")


def test_the_deployed_loop_polls_every_five_minutes_for_two_days_then_times_out(
    definition: Definition,
) -> None:
    states = definition["States"]
    assert states["Wait"]["Seconds"] == 300
    choices = states["Ended?"]["Choices"]
    assert choices[0] == {
        "Variable": "$.progress.terminal",
        "BooleanEquals": True,
        "Next": "EmitTrainingEnded",
    }
    assert choices[1] == {"Variable": "$.progress.polls", "NumericGreaterThanEquals": 576, "Next": "TimeOut"}
    assert states["Ended?"]["Default"] == "Wait"
    assert states["TimeOut"]["Parameters"]["poll_seconds"] == 300


@pytest.mark.parametrize("name", TASKS)
def test_provider_faults_that_may_pass_are_retried_with_backoff_and_any_failure_is_recorded(
    definition: Definition, name: str
) -> None:
    state = definition["States"][name]
    (busy,) = [retry for retry in state["Retry"] if retry["ErrorEquals"] == ["ProviderBusy"]]
    assert busy == {
        "ErrorEquals": ["ProviderBusy"],
        "IntervalSeconds": 30,
        "MaxAttempts": 5,
        "BackoffRate": 2,
    }
    assert state["Catch"] == [
        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RecordFailure"}
    ]


def test_every_end_is_announced_by_the_status_it_reached(definition: Definition) -> None:
    (entry,) = definition["States"]["EmitTrainingEnded"]["Parameters"]["Entries"]
    assert entry["DetailType.$"] == "$.progress.event"
    assert entry["Source"] == "benchgen"
    assert entry["Detail"] == {
        "training_run_id.$": "$.training_run_id",
        "status.$": "$.progress.status",
        "job_id.$": "$.progress.job_id",
        "result_model.$": "$.progress.result_model",
    }


def test_the_state_machine_invokes_only_the_training_functions_and_puts_events_only_on_the_bus(
    resources: dict[str, Resource], render: Any
) -> None:
    role = resources["TrainingPipeline"]["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    policies = [
        resource
        for resource in resources.values()
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role} in resource["Properties"]["Roles"]
    ]
    statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    invoked = {
        render(resource)
        for s in statements
        if "lambda:InvokeFunction" in s["Action"]
        for resource in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
    }
    assert invoked == {
        f"${{{logical_id}.Arn}}{suffix}"
        for logical_id in ("ValidateTrainingFunction", "UploadTrainingFunction", "TrainingJobFunction")
        for suffix in ("", ":*")
    }
    events = [s for s in statements if s["Action"] == "events:PutEvents"]
    assert [render(s["Resource"]) for s in events] == ["${EventBus.Arn}"]
