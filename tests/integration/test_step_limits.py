"""The local cloud enforces the Step Functions and Lambda quotas a design can break, as AWS does: small
state machines on moto's interpreter, with the limits installed as the local cloud installs them."""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from localcloud.cloud import MOTO_CONFIG
from localcloud.lambda_hook import LambdaHook
from localcloud.step_limits import HISTORY_CAUSE, HISTORY_LIMIT, INLINE_MAP_CONCURRENCY, StepLimits

REGION = "us-east-1"
# One byte over a state's 256 KiB, as the JSON string the state carries ("" and the quotes included).
OVERSIZED = "x" * (256 * 1024)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    # moto types its config as a TypedDict of every option; this sets one of them.
    with mock_aws(config=MOTO_CONFIG), StepLimits():  # type: ignore[call-overload]
        yield


def _role() -> str:
    return str(
        boto3.client("iam").create_role(
            RoleName=f"limits-{time.monotonic_ns()}",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
    )


def _execute(definition: dict[str, Any], execution_input: Any = None, timeout: float = 120) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions")
    machine = sfn.create_state_machine(
        name=f"limits-{time.monotonic_ns()}", definition=json.dumps(definition), roleArn=_role()
    )["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine, name="only", input=json.dumps(execution_input or {}))[
        "executionArn"
    ]
    deadline = time.monotonic() + timeout
    while (described := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the execution did not end"
        time.sleep(0.05)
    answer: dict[str, Any] = described
    return answer


def _history(arn: str) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions")
    events: list[dict[str, Any]] = []
    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=arn, maxResults=1000):
        events.extend(page["events"])
    return events


def test_a_state_output_above_256_kib_fails_the_execution_with_data_limit_exceeded(aws: None) -> None:
    # Given a Pass state whose result is one byte over the payload quota
    definition = {"StartAt": "Big", "States": {"Big": {"Type": "Pass", "Result": OVERSIZED, "End": True}}}

    # When it runs
    described = _execute(definition)

    # Then the execution failed with States.DataLimitExceeded
    assert described["status"] == "FAILED"
    assert described["error"] == "States.DataLimitExceeded"


def test_a_state_output_just_under_256_kib_passes(aws: None) -> None:
    # Given the same state with a result that fits (the JSON string with its quotes is under 256 KiB)
    fits = {"Type": "Pass", "Result": OVERSIZED[:-3], "End": True}
    definition = {"StartAt": "Fits", "States": {"Fits": fits}}

    # Then the execution succeeds: the quota is the limit, not a margin below it
    assert _execute(definition)["status"] == "SUCCEEDED"


def test_a_lambda_result_above_256_kib_fails_the_execution_and_is_not_retried(aws: None) -> None:
    # Given a Lambda function answering 300 KB, and a task retrying and catching States.ALL
    calls: list[Any] = []

    def big(event: Any, context: Any) -> str:
        calls.append(event)
        return "y" * 300_000

    created = boto3.client("lambda").create_function(
        FunctionName="big",
        Runtime="python3.12",
        Role=_role(),
        Handler="handler.handler",
        Code={"ZipFile": _zip()},
    )
    definition = {
        "StartAt": "Ask",
        "States": {
            "Ask": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": created["FunctionArn"], "Payload": {}},
                "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2, "IntervalSeconds": 1}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Succeed"},
        },
    }

    # When it runs with the function's handler in-process
    with LambdaHook({"big": big}, region=REGION):
        described = _execute(definition)

    # Then the execution failed with States.DataLimitExceeded after one call: no retry, no catch
    assert described["status"] == "FAILED"
    assert described["error"] == "States.DataLimitExceeded"
    assert len(calls) == 1


@pytest.mark.slow
def test_an_execution_whose_history_passes_25000_events_fails_with_the_history_limit(aws: None) -> None:
    # Given a loop of Pass and Choice states that would write about 4 events per turn for 7,000 turns
    definition = {
        "StartAt": "Count",
        "States": {
            "Count": {
                "Type": "Pass",
                "Parameters": {"n.$": "States.MathAdd($.n, 1)"},
                "Next": "More?",
            },
            "More?": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.n", "NumericLessThan": 7000, "Next": "Count"}],
                "Default": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }

    # When it runs
    described = _execute(definition, {"n": 0}, timeout=300)

    # Then it failed at the limit with AWS's sentence, and its history holds exactly 25,000 events,
    # the last one its failure
    assert described["status"] == "FAILED"
    assert described["cause"] == HISTORY_CAUSE
    events = _history(described["executionArn"])
    assert len(events) == HISTORY_LIMIT
    assert events[-1]["type"] == "ExecutionFailed"


def test_an_execution_under_the_history_limit_succeeds(aws: None) -> None:
    # Given the same loop for 100 turns (about 400 events)
    definition = {
        "StartAt": "Count",
        "States": {
            "Count": {"Type": "Pass", "Parameters": {"n.$": "States.MathAdd($.n, 1)"}, "Next": "More?"},
            "More?": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.n", "NumericLessThan": 100, "Next": "Count"}],
                "Default": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }

    # Then it succeeds with its result
    described = _execute(definition, {"n": 0})
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"n": 100}


def test_an_inline_map_runs_at_most_40_iterations_at_once_whatever_its_max_concurrency(aws: None) -> None:
    # Given an inline Map over 60 items with MaxConcurrency 0 (no limit asked), each iteration a
    # Lambda task that notes how many iterations are running with it, and waits until 40 have run
    # together (however slowly a loaded machine starts them) before it takes its time and returns
    running = 0
    most = 0
    gathered = threading.Condition()

    def slow(event: Any, context: Any) -> int:
        nonlocal running, most
        with gathered:
            running += 1
            most = max(most, running)
            gathered.notify_all()
            gathered.wait_for(lambda: most >= INLINE_MAP_CONCURRENCY, timeout=60)
        time.sleep(0.3)
        with gathered:
            running -= 1
        return int(event["item"])

    created = boto3.client("lambda").create_function(
        FunctionName="slow",
        Runtime="python3.12",
        Role=_role(),
        Handler="handler.handler",
        Code={"ZipFile": _zip()},
    )
    definition = {
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrency": 0,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Ask",
                    "States": {
                        "Ask": {
                            "Type": "Task",
                            "Resource": "arn:aws:states:::lambda:invoke",
                            "Parameters": {
                                "FunctionName": created["FunctionArn"],
                                "Payload": {"item.$": "$"},
                            },
                            "OutputPath": "$.Payload",
                            "End": True,
                        }
                    },
                },
                "End": True,
            }
        },
    }

    # When it runs
    with LambdaHook({"slow": slow}, region=REGION):
        described = _execute(definition, {"items": list(range(60))})

    # Then every item was answered, in order, and never more than 40 at once (but 40 did run together)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == list(range(60))
    assert most == INLINE_MAP_CONCURRENCY


def test_a_lambda_invocation_past_its_timeout_fails_as_lambda_reports_it(aws: None) -> None:
    # Given a function with a 1 s timeout whose handler takes longer
    def late(event: Any, context: Any) -> str:
        time.sleep(1.2)
        return "too late"

    created = boto3.client("lambda").create_function(
        FunctionName="late",
        Runtime="python3.12",
        Role=_role(),
        Handler="handler.handler",
        Code={"ZipFile": _zip()},
        Timeout=1,
    )
    definition = {
        "StartAt": "Ask",
        "States": {
            "Ask": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": created["FunctionArn"], "Payload": {}},
                "End": True,
            }
        },
    }

    # When a state machine invokes it
    with LambdaHook({"late": late}, region=REGION):
        described = _execute(definition)

    # Then the task failed with Lambda's timeout, not the handler's late answer
    assert described["status"] == "FAILED"
    assert described["error"] == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in described["cause"]


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()
