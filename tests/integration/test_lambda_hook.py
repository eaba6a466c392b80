"""The Lambda hook: moto's Lambda invocations run in-process Python handlers, whatever the caller."""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from localcloud.cloud import MOTO_CONFIG
from localcloud.lambda_hook import LambdaHook
from localcloud.lambda_runtime import LambdaContext
from localcloud.s3_notifications import S3Notifications

REGION = "us-east-1"
BUCKET = "hook-test-bucket"


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


class Recorder:
    """A stand-in handler that remembers what it was called with."""

    def __init__(self, result: Any = None, error: Exception | None = None) -> None:
        self.result = result
        self.error = error
        self.events: list[Any] = []
        self.contexts: list[Any] = []

    def __call__(self, event: Any, context: Any) -> Any:
        self.events.append(event)
        self.contexts.append(context)
        if self.error is not None:
            raise self.error
        return self.result


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
    with mock_aws(config=MOTO_CONFIG):  # type: ignore[call-overload]
        yield


def _function(name: str) -> str:
    role = boto3.client("iam").create_role(
        RoleName=f"{name}-role",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    created = boto3.client("lambda").create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": _zip()},
    )
    return str(created["FunctionArn"])


def _run_state_machine(definition: dict[str, Any], execution_input: dict[str, Any]) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions")
    machine = sfn.create_state_machine(
        name="hook-test",
        definition=json.dumps(definition),
        roleArn="arn:aws:iam::123456789012:role/hook-test-role",
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine, name="run-1", input=json.dumps(execution_input))
    for _ in range(200):
        described: dict[str, Any] = sfn.describe_execution(executionArn=execution["executionArn"])
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError("the execution did not finish")


def test_s3_upload_runs_the_handler_registered_for_the_notified_function(aws: None) -> None:
    # given a bucket that notifies a function whose handler is registered with the hook
    arn = _function("ingest-fn")
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_notification_configuration(
        Bucket=BUCKET,
        NotificationConfiguration={
            "LambdaFunctionConfigurations": [{"LambdaFunctionArn": arn, "Events": ["s3:ObjectCreated:*"]}]
        },
    )
    ingest = Recorder(result={"ok": True})
    with LambdaHook({"ingest-fn": ingest}):
        # when an object is uploaded
        s3.put_object(Bucket=BUCKET, Key="submissions/run-1/my file.zip", Body=b"data")

    # then the handler ran with the S3 notification record for that object
    assert len(ingest.events) == 1
    record = ingest.events[0]["Records"][0]
    assert record["eventName"] == "ObjectCreated:Put"
    assert record["s3"]["bucket"]["name"] == BUCKET
    assert record["s3"]["object"]["key"] == "submissions%2Frun-1%2Fmy+file.zip"


def test_state_machine_lambda_task_receives_the_handler_result(aws: None) -> None:
    # given a state machine whose task invokes a function through lambda:invoke
    arn = _function("build-fn")
    definition = {
        "StartAt": "Build",
        "States": {
            "Build": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": arn, "Payload.$": "$"},
                "OutputPath": "$.Payload",
                "End": True,
            }
        },
    }
    build = Recorder(result={"emitted": True, "example_count": "200"})
    with LambdaHook({"build-fn": build}):
        # when it runs
        described = _run_state_machine(definition, {"run_id": "r-1"})

    # then the handler saw the execution input and its result is the execution output
    assert described["status"] == "SUCCEEDED"
    assert build.events == [{"run_id": "r-1"}]
    assert json.loads(described["output"]) == {"emitted": True, "example_count": "200"}


def test_handler_exception_reaches_the_state_machine_catch_as_its_error_type(aws: None) -> None:
    # given a task whose handler raises, and a Catch on that exception's type name
    arn = _function("failing-fn")
    definition = {
        "StartAt": "Build",
        "States": {
            "Build": {
                "Type": "Task",
                "Resource": arn,
                "Catch": [{"ErrorEquals": ["KeyError"], "ResultPath": "$.error", "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }
    failing = Recorder(error=KeyError("run_id"))
    with LambdaHook({"failing-fn": failing}):
        # when it runs
        described = _run_state_machine(definition, {"run_id": "r-2"})

    # then the Catch routed it, with the error name and message as Lambda reports them
    assert described["status"] == "SUCCEEDED"
    output = json.loads(described["output"])
    assert output["error"]["Error"] == "KeyError"
    assert json.loads(output["error"]["Cause"])["errorMessage"] == "'run_id'"


def test_direct_invoke_of_a_failing_handler_reports_a_function_error(aws: None) -> None:
    # given a registered handler that raises
    _function("api-fn")
    with LambdaHook({"api-fn": Recorder(error=ValueError("bad input"))}):
        # when it is invoked with boto3
        response = boto3.client("lambda").invoke(FunctionName="api-fn", Payload=b'{"x": 1}')

    # then Lambda's error payload comes back, flagged as a function error
    payload = json.loads(response["Payload"].read())
    assert response["FunctionError"] == "Handled"
    assert payload["errorType"] == "ValueError"
    assert payload["errorMessage"] == "bad input"
    assert any("bad input" in line for line in payload["stackTrace"])


def test_handler_receives_a_context_describing_the_function(aws: None) -> None:
    # given a registered handler
    arn = _function("score-fn")
    score = Recorder(result="done")
    with LambdaHook({"score-fn": score}):
        # when it is invoked
        response = boto3.client("lambda").invoke(FunctionName="score-fn", Payload=b"{}")

    # then it got a context naming the function, with time left before its timeout
    context = score.contexts[0]
    assert json.loads(response["Payload"].read()) == "done"
    assert isinstance(context, LambdaContext)
    assert context.function_name == "score-fn"
    assert context.invoked_function_arn == arn
    assert context.memory_limit_in_mb == 128
    assert len(context.aws_request_id) == 36
    assert 0 < context.get_remaining_time_in_millis() <= 3000


def test_function_without_a_registered_handler_reports_which_one_is_missing(aws: None) -> None:
    # given a hook that knows no handler for the function
    _function("orphan-fn")
    with LambdaHook({}):
        # when the function is invoked
        response = boto3.client("lambda").invoke(FunctionName="orphan-fn", Payload=b"{}")

    # then the error names the function
    payload = json.loads(response["Payload"].read())
    assert payload["errorType"] == "LookupError"
    assert "'orphan-fn'" in payload["errorMessage"]


def test_leaving_the_hook_gives_moto_its_echo_behaviour_back(aws: None) -> None:
    # given a hook that was entered and left
    _function("echo-fn")
    with LambdaHook({"echo-fn": Recorder(result="from handler")}):
        pass

    # when the function is invoked afterwards
    response = boto3.client("lambda").invoke(FunctionName="echo-fn", Payload=b'{"a": 1}')

    # then moto answers as it does without the hook
    assert json.loads(response["Payload"].read()) == {"a": 1}


def _notifying_bucket(function_arn: str, *, versioned: bool = False) -> Any:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    if versioned:
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_notification_configuration(
        Bucket=BUCKET,
        NotificationConfiguration={
            "LambdaFunctionConfigurations": [
                {"LambdaFunctionArn": function_arn, "Events": ["s3:ObjectCreated:*"]}
            ]
        },
    )
    return s3


def test_concurrent_uploads_with_metadata_each_notify_a_handler_that_sees_the_metadata(aws: None) -> None:
    # given a notified function whose handler reads each uploaded object's metadata
    s3 = _notifying_bucket(_function("metadata-fn"))
    seen: dict[str, dict[str, str]] = {}

    def handler(event: dict[str, Any], context: Any) -> None:
        key = event["Records"][0]["s3"]["object"]["key"]
        seen[key] = s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]

    uploads = 50
    with LambdaHook({"metadata-fn": handler}) as hook, S3Notifications():
        # when many objects with metadata are uploaded at the same time (as `aws s3 cp --metadata` does)
        with ThreadPoolExecutor(max_workers=10) as pool:
            list(
                pool.map(
                    lambda n: s3.put_object(
                        Bucket=BUCKET, Key=f"run-{n}.zip", Body=b"zip", Metadata={"model": f"m{n}"}
                    ),
                    range(uploads),
                )
            )
        assert hook.asynchronous.wait_idle(30)

    # then every handler ran after its object's metadata was stored
    assert seen == {f"run-{n}.zip": {"model": f"m{n}"} for n in range(uploads)}


def test_a_versioned_buckets_notification_names_the_object_version_it_announces(aws: None) -> None:
    # given a versioned bucket notifying a function
    s3 = _notifying_bucket(_function("ingest-fn"), versioned=True)
    ingest = Recorder()
    with LambdaHook({"ingest-fn": ingest}) as hook, S3Notifications():
        # when the same key is uploaded twice
        versions = [s3.put_object(Bucket=BUCKET, Key="k.zip", Body=b)["VersionId"] for b in (b"1", b"2")]
        assert hook.asynchronous.wait_idle(10)

    # then each event carries the version it is about, as S3 sends it
    announced = sorted(event["Records"][0]["s3"]["object"]["versionId"] for event in ingest.events)
    assert announced == sorted(versions)


# ---- Lambda's payload quotas -----------------------------------------------------------------------------

SYNC_RESPONSE_LIMIT = 6_291_556


def _invoke(name: str, payload: bytes, invocation_type: str = "RequestResponse") -> dict[str, Any]:
    answer: dict[str, Any] = boto3.client("lambda").invoke(
        FunctionName=name, InvocationType=invocation_type, Payload=payload
    )
    return answer


def test_a_synchronous_response_over_6_mb_fails_as_lambda_reports_it_and_a_5_mb_one_passes(aws: None) -> None:
    # Given a function whose handler answers a string of the size its event asks for
    _function("echo-size")
    with LambdaHook({"echo-size": lambda event, context: "x" * event["chars"]}):
        # When it answers one byte more than Lambda returns (the JSON string adds its two quotes), and 5 MB
        over = _invoke("echo-size", json.dumps({"chars": SYNC_RESPONSE_LIMIT - 1}).encode())
        under = _invoke("echo-size", json.dumps({"chars": 5_000_000}).encode())

    # Then the first is Lambda's function error, naming both sizes, and its answer is gone
    assert over["FunctionError"]
    assert json.loads(over["Payload"].read()) == {
        "errorType": "Function.ResponseSizeTooLarge",
        "errorMessage": "Response payload size (6291557 bytes) exceeded maximum allowed payload size "
        "(6291556 bytes).",
    }
    # and the second comes back whole
    assert "FunctionError" not in under
    assert len(under["Payload"].read()) == 5_000_002


def test_a_state_machine_task_whose_lambda_answers_over_6_mb_fails_with_lambdas_error(aws: None) -> None:
    # moto's own response check (sys.getsizeof over 6,000,000) names this error too: this keeps it so.
    # Given a state machine whose Lambda task answers 7 MB, and a Catch on Lambda's error
    arn = _function("too-much")
    definition = {
        "StartAt": "Answer",
        "States": {
            "Answer": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": arn, "Payload": {}},
                "Catch": [{"ErrorEquals": ["Function.ResponseSizeTooLarge"], "Next": "TooLarge"}],
                "End": True,
            },
            "TooLarge": {"Type": "Pass", "Result": {"caught": True}, "ResultPath": "$.outcome", "End": True},
        },
    }
    with LambdaHook({"too-much": lambda event, context: "x" * 7_000_000}):
        # When it runs, then the task's error is Lambda's and the Catch takes it
        execution = _run_state_machine(definition, {})
    assert execution["status"] == "SUCCEEDED", execution
    assert json.loads(execution["output"])["outcome"] == {"caught": True}


def test_a_synchronous_request_of_6_mib_is_refused_with_413_before_the_handler_runs(aws: None) -> None:
    # Given a function
    _function("takes-events")
    recorder = Recorder(result="ok")
    with LambdaHook({"takes-events": recorder}):
        # When it is invoked with 6 MiB (Lambda takes less), and with just under
        body = json.dumps({"blob": "x" * (6_291_456 - 12)}).encode()
        assert len(body) == 6_291_456
        with pytest.raises(ClientError) as refused:
            _invoke("takes-events", body)
        under = _invoke("takes-events", body[:-13] + b'"}')

    # Then the first is Lambda's 413 with its sentence, and only the second reached the handler
    error = refused.value.response
    assert error["Error"]["Code"] == "RequestEntityTooLargeException"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 413
    assert error["Error"]["Message"] == (
        "Request must be smaller than 6291456 bytes for the InvokeFunction operation"
    )
    assert json.loads(under["Payload"].read()) == "ok"
    assert len(recorder.events) == 1


def test_an_asynchronous_request_over_1_mib_is_refused_with_413_and_never_delivered(aws: None) -> None:
    # Given a function
    _function("takes-events")
    recorder = Recorder(result="ok")
    with LambdaHook({"takes-events": recorder}) as hook:
        # When it is invoked asynchronously with one byte over 1 MiB, and with exactly 1 MiB
        over = json.dumps({"blob": "x" * (1_048_576 - 11)}).encode()
        assert len(over) == 1_048_577
        with pytest.raises(ClientError) as refused:
            _invoke("takes-events", over, "Event")
        accepted = _invoke("takes-events", over[:-3] + b'"}', "Event")
        assert hook.asynchronous.wait_idle(10)

    # Then the first is Lambda's 413 naming the Event limit, and only the second was delivered
    assert refused.value.response["Error"]["Code"] == "RequestEntityTooLargeException"
    assert refused.value.response["Error"]["Message"] == (
        "1048577 byte payload is too large for the Event invocation type (limit 1048576 bytes)"
    )
    assert accepted["StatusCode"] == 202
    assert len(recorder.events) == 1
