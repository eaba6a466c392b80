"""The local cloud retries a failed asynchronous invocation as the template configures Lambda to, then
sends the event to the function's dead-letter queue with the attributes Lambda adds."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from localcloud.cloud import LocalCloud
from tests.stacks import resources


def test_a_failing_asynchronous_invocation_is_retried_as_configured_then_dead_lettered(
    stack_templates: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a template that allows the artifact function one retry (Lambda's default is two)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    stacks = copy.deepcopy(stack_templates)
    (config,) = [
        resource["Properties"]
        for _, resource in resources(stacks)
        if resource["Type"] == "AWS::Lambda::EventInvokeConfig"
        and resource["Properties"]["FunctionName"] == {"Ref": "BuildArtifactFunction"}
    ]
    config["MaximumRetryAttempts"] = 1
    seen: list[str] = []

    def failing(event: Any, context: Any) -> None:
        seen.append(context.aws_request_id)
        raise RuntimeError("the artifact could not be built")

    with LocalCloud(stacks, handlers={"build_artifact": failing}) as cloud:
        name = cloud.functions["BuildArtifactFunction"]

        # when the function is invoked asynchronously and fails every time
        cloud.client("lambda").invoke(
            FunctionName=name, InvocationType="Event", Payload=json.dumps({"run_id": "run-1"})
        )
        cloud.settle()

        queue = cloud.hook.asynchronous.configs[name].dead_letter_queue
        assert queue is not None
        messages = cloud.client("sqs").receive_message(QueueUrl=queue, MessageAttributeNames=["All"])
        # (nothing consumes this queue: only the run steps' and registrations' are settled)

    # then it ran twice under one request id, and the event waits in its queue with Lambda's attributes
    assert len(seen) == 2 and len(set(seen)) == 1
    (message,) = messages["Messages"]
    assert json.loads(message["Body"]) == {"run_id": "run-1"}
    assert {name: value["StringValue"] for name, value in message["MessageAttributes"].items()} == {
        "RequestID": seen[0],
        "ErrorCode": "200",
        "ErrorMessage": "the artifact could not be built",
    }
    assert message["MessageAttributes"]["ErrorCode"]["DataType"] == "Number"
