"""What the integration tests build again and again, built in one place: the records they store directly,
the events they send the API, the example submissions they upload, and what they read back."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, cast

from aws_lambda_powertools.utilities.typing import LambdaContext

from localcloud.cloud import LocalCloud
from localcloud.threaded_server import ThreadedServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


OWNER = "user-a"
STRANGER = "user-b"


@dataclass
class FakeContext:
    function_name: str = "benchgen-api"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:benchgen-api"
    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e812345678"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def api_context() -> LambdaContext:
    """The API function's context, as the handler reads it (every attribute powertools reads is here)."""
    return cast(LambdaContext, FakeContext())


def proxy_event(
    method: str,
    path: str,
    *,
    resource: str | None = None,
    path_parameters: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: Any = None,
    sub: str | None = OWNER,
    headers: dict[str, str] | None = None,
    is_base64: bool = False,
    groups: str | None = None,
) -> dict[str, Any]:
    """An API Gateway REST proxy event; ``sub`` None means no Cognito claims.

    ``groups`` is the ``cognito:groups`` claim as the REST API's authorizer hands it over: ``"a,b"``.
    """
    authorizer: dict[str, Any] = {}
    if sub is not None:
        authorizer = {"claims": {"sub": sub, "email": f"{sub}@example.com", "token_use": "id"}}
        if groups is not None:
            authorizer["claims"]["cognito:groups"] = groups
    return {
        "resource": resource or path,
        "path": path,
        "httpMethod": method,
        "headers": {
            "Accept": "application/json",
            "Content-Type": "application/json",
            "Host": "api.example.com",
            **(headers or {}),
        },
        "multiValueHeaders": {},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource or path,
            "httpMethod": method,
            "path": f"/prod{path}",
            "stage": "prod",
            "requestId": "req-0001",
            "accountId": "123456789012",
            "apiId": "abc123",
            "identity": {"sourceIp": "203.0.113.7", "userAgent": "pytest"},
            "authorizer": authorizer,
        },
        "body": body if body is None or isinstance(body, str) else json.dumps(body),
        "isBase64Encoded": is_base64,
    }


@dataclass
class Answer:
    status: int
    body: Any


Call = Callable[..., Answer]


def example_submission(name: str) -> Path:
    return next(iter(sorted((EXAMPLES / name / "submission").glob("predictions.*"))))


def watch_events(cloud: LocalCloud) -> str:
    """A rule on the bus that copies every BenchGen event into a queue the test can read."""
    sqs = cloud.client("sqs")
    queue_url: str = sqs.create_queue(QueueName="domain-events")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events = cloud.client("events")
    events.put_rule(
        Name="all-benchgen", EventBusName=cloud.bus_name, EventPattern=json.dumps({"source": ["benchgen"]})
    )
    events.put_targets(
        Rule="all-benchgen", EventBusName=cloud.bus_name, Targets=[{"Id": "q", "Arn": queue_arn}]
    )
    return queue_url


def received_events(cloud: LocalCloud, queue_url: str) -> list[tuple[str, dict[str, Any]]]:
    messages = cloud.client("sqs").receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)
    bodies = [json.loads(message["Body"]) for message in messages.get("Messages", [])]
    return [(body["detail-type"], body["detail"]) for body in bodies]


def everything_stored(cloud: LocalCloud) -> str:
    """Every table item, every object (each version), and every execution's history, as text."""
    parts: list[str] = []
    dynamodb = cloud.client("dynamodb")
    for name in cloud.table_names.values():
        parts.append(json.dumps(dynamodb.scan(TableName=name)["Items"]))
    s3 = cloud.client("s3")
    for version in s3.list_object_versions(Bucket=cloud.bucket).get("Versions", []):
        body = s3.get_object(Bucket=cloud.bucket, Key=version["Key"], VersionId=version["VersionId"])["Body"]
        parts.append(body.read().decode("utf-8", errors="replace"))
    sfn = cloud.client("stepfunctions")
    for machine in cloud.state_machine_arns.values():
        for execution in sfn.list_executions(stateMachineArn=machine)["executions"]:
            history = sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
            parts.append(json.dumps(history, default=str))
    return "\n".join(parts)


class KeyQuotingServer(ThreadedServer):
    """A model server that refuses every request by quoting its Authorization header back, as some do."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's naming
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                said = f"invalid API key: {self.headers.get('Authorization')}"
                data = json.dumps({"error": {"message": said, "type": "invalid_request_error"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        super().__init__(Handler, host="127.0.0.1", port=0, name="key-quoting-models")
