"""The requests sent to each inference API, checked against botocore's service models or the documented
schema, and how each API's answers and errors are read."""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import jsonschema
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from benchgen.aws.clients import reset_clients
from benchgen.aws.providers import bedrock as bedrock_adapter
from benchgen.aws.providers import sagemaker as sagemaker_adapter
from benchgen.aws.providers.registry import model_for
from benchgen.inference.model import ModelCallError
from benchgen.inference.shapes import chat_answer, chat_request
from benchgen.providers.bedrock import converse_request
from benchgen.providers.sagemaker import generate_request
from benchgen.records.runs import LiveModel
from benchgen.vocabulary import ProviderKind, Sampling

SAMPLING = Sampling(temperature=0.0, max_tokens=256, top_p=0.9, stop=["####"])

# OpenAI's CreateChatCompletionRequest, reduced to the fields this project sends (openai-openapi spec).
CHAT_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["model", "messages"],
    "additionalProperties": False,
    "properties": {
        "model": {"type": "string"},
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {
                    "role": {"enum": ["developer", "system", "user", "assistant", "tool"]},
                    "content": {"type": "string"},
                },
            },
        },
        "max_tokens": {"type": "integer"},
        "temperature": {"type": "number", "minimum": 0, "maximum": 2},
        "top_p": {"type": "number", "minimum": 0, "maximum": 1},
        "stop": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
    },
}


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Real botocore clients (parameters validated against their service models) behind a Stubber."""
    made: dict[str, tuple[Any, Stubber]] = {}

    def regional(service: str, region: str, *, timeout_s: float = 60) -> Any:
        if service not in made:
            client = boto3.client(
                service, region_name=region, aws_access_key_id="x", aws_secret_access_key="x"
            )
            made[service] = (client, Stubber(client))
            made[service][1].activate()
        return made[service][0]

    for adapter in (bedrock_adapter, sagemaker_adapter):
        monkeypatch.setattr(adapter, "regional", regional)

    def stubber(service: str) -> Stubber:
        regional(service, "us-east-1")
        return made[service][1]

    return stubber


def _body(payload: Any) -> StreamingBody:
    data = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(data), len(data))


def test_bedrock_converse_request_matches_the_service_model_and_its_text_is_read(stubbed: Any) -> None:
    model = bedrock_adapter.BedrockConverse("us-east-1", "amazon.nova-lite-v1:0", SAMPLING, timeout_s=60)
    stub = stubbed("bedrock-runtime")
    stub.add_response(
        "converse",
        {
            "output": {
                "message": {"role": "assistant", "content": [{"text": "The answer is "}, {"text": "42."}]}
            },
            "stopReason": "end_turn",
            "usage": {"inputTokens": 5, "outputTokens": 4, "totalTokens": 9},
            "metrics": {"latencyMs": 120},
        },
        expected_params={
            "modelId": "amazon.nova-lite-v1:0",
            "messages": [{"role": "user", "content": [{"text": "What is 6 x 7?"}]}],
            "inferenceConfig": {"maxTokens": 256, "temperature": 0.0, "topP": 0.9, "stopSequences": ["####"]},
        },
    )

    answer = model.complete("What is 6 x 7?")

    assert answer.text == "The answer is 42."
    assert json.loads(answer.raw)["stopReason"] == "end_turn"
    stub.assert_no_pending_responses()


def test_a_converse_request_with_a_misnamed_field_is_refused_by_the_service_model() -> None:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    request = converse_request("m", "p", SAMPLING)
    request["inferenceConfig"]["max_tokens"] = request["inferenceConfig"].pop("maxTokens")
    with Stubber(client) as stub:
        stub.add_response(
            "converse",
            {
                "output": {"message": {"role": "assistant", "content": []}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1},
            },
        )
        with pytest.raises(Exception, match="max_tokens"):
            client.converse(**request)


@pytest.mark.parametrize(
    ("code", "retryable"),
    [("ThrottlingException", True), ("ServiceUnavailableException", True), ("ValidationException", False)],
)
def test_bedrock_errors_are_retryable_only_for_throttling_and_service_faults(
    stubbed: Any, code: str, retryable: bool
) -> None:
    stubbed("bedrock-runtime").add_client_error("converse", service_error_code=code, service_message="nope")

    with pytest.raises(ModelCallError) as raised:
        bedrock_adapter.BedrockConverse("us-east-1", "m", SAMPLING, timeout_s=60).complete("q")

    assert raised.value.retryable is retryable
    assert f"Bedrock model m answered {code}: nope" in str(raised.value)


def test_sagemaker_tgi_request_and_generated_text(stubbed: Any) -> None:
    stub = stubbed("sagemaker-runtime")
    expected_body = {
        "inputs": "What is 6 x 7?",
        "parameters": {
            "return_full_text": False,
            "max_new_tokens": 256,
            "do_sample": False,
            "top_p": 0.9,
            "stop": ["####"],
        },
    }
    stub.add_response(
        "invoke_endpoint",
        {"Body": _body([{"generated_text": " 42"}]), "ContentType": "application/json"},
        expected_params={
            "EndpointName": "tuned-endpoint",
            "ContentType": "application/json",
            "Accept": "application/json",
            "Body": json.dumps(expected_body).encode(),
        },
    )

    answer = sagemaker_adapter.SageMakerEndpoint(
        "us-east-1", "tuned-endpoint", SAMPLING, messages_api=False, timeout_s=60
    ).complete("What is 6 x 7?")

    assert answer.text == " 42"
    assert json.loads(answer.raw) == [{"generated_text": " 42"}]


def test_sagemaker_messages_api_request_and_chat_answer(stubbed: Any) -> None:
    stub = stubbed("sagemaker-runtime")
    expected = {"messages": [{"role": "user", "content": "q"}], "max_tokens": 8}
    stub.add_response(
        "invoke_endpoint",
        {"Body": _body({"choices": [{"index": 0, "message": {"role": "assistant", "content": "42"}}]})},
        expected_params={
            "EndpointName": "e",
            "ContentType": "application/json",
            "Accept": "application/json",
            "Body": json.dumps(expected).encode(),
        },
    )

    answer = sagemaker_adapter.SageMakerEndpoint(
        "us-east-1", "e", Sampling(max_tokens=8), messages_api=True, timeout_s=60
    ).complete("q")

    assert answer.text == "42"


def test_a_sagemaker_container_5xx_is_retryable_and_a_4xx_is_not(stubbed: Any) -> None:
    stub = stubbed("sagemaker-runtime")
    stub.add_client_error(
        "invoke_endpoint",
        service_error_code="ModelError",
        service_message="CUDA out of memory",
        http_status_code=424,
        response_meta={},
        modeled_fields={"OriginalStatusCode": 503},
    )
    stub.add_client_error(
        "invoke_endpoint",
        service_error_code="ModelError",
        service_message="bad input",
        http_status_code=424,
        modeled_fields={"OriginalStatusCode": 422},
    )
    endpoint = sagemaker_adapter.SageMakerEndpoint(
        "us-east-1", "e", SAMPLING, messages_api=False, timeout_s=60
    )

    with pytest.raises(ModelCallError) as first:
        endpoint.complete("q")
    with pytest.raises(ModelCallError) as second:
        endpoint.complete("q")

    assert first.value.retryable is True
    assert second.value.retryable is False
    assert "bad input" in str(second.value)


def test_an_answer_without_generated_text_says_what_was_missing(stubbed: Any) -> None:
    stubbed("sagemaker-runtime").add_response("invoke_endpoint", {"Body": _body({"outputs": "42"})})

    with pytest.raises(ModelCallError, match="no generated_text") as raised:
        sagemaker_adapter.SageMakerEndpoint(
            "us-east-1", "e", SAMPLING, messages_api=False, timeout_s=60
        ).complete("q")

    assert raised.value.retryable is False


def test_chat_completions_request_follows_the_documented_schema() -> None:
    body = chat_request("example-base", "What is 6 x 7?", SAMPLING)

    jsonschema.validate(body, CHAT_REQUEST_SCHEMA)
    assert body == {
        "model": "example-base",
        "messages": [{"role": "user", "content": "What is 6 x 7?"}],
        "max_tokens": 256,
        "temperature": 0.0,
        "top_p": 0.9,
        "stop": ["####"],
    }


def test_a_tgi_body_asks_for_greedy_decoding_instead_of_temperature_zero() -> None:
    assert generate_request("p", Sampling(temperature=0))["parameters"] == {
        "return_full_text": False,
        "do_sample": False,
    }


def test_a_chat_answer_with_null_content_is_an_empty_answer_and_one_without_choices_an_error() -> None:
    assert chat_answer({"choices": [{"message": {"role": "assistant", "content": None}}]}, "").text == ""
    with pytest.raises(ModelCallError, match=r"no choices\[0\]\.message\.content"):
        chat_answer({"error": "x"}, "")


def test_sampling_refuses_values_no_provider_accepts() -> None:
    with pytest.raises(ValueError, match="temperature"):
        Sampling(temperature=3)
    with pytest.raises(ValueError, match="seed"):
        Sampling.model_validate({"seed": 1})


@pytest.fixture
def silent_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A loopback endpoint that reads each request and never answers, as every AWS runtime client's
    endpoint (the SDK's per-service endpoint variables), with made-up credentials."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = listener.accept()
                held.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for service in ("BEDROCK_RUNTIME", "SAGEMAKER_RUNTIME"):
        monkeypatch.setenv(f"AWS_ENDPOINT_URL_{service}", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    reset_clients()
    yield url
    reset_clients()
    listener.close()
    for connection in held:
        connection.close()


@pytest.mark.parametrize(
    ("provider", "what"),
    [("bedrock", "Bedrock model m"), ("sagemaker", "SageMaker endpoint m")],
)
def test_a_runtime_call_that_gets_no_answer_gives_up_after_the_connections_timeout(
    silent_endpoint: str, provider: str, what: str
) -> None:
    # Given a Bedrock or SageMaker model, on a connection with a 1 s timeout, whose endpoint never answers
    live = LiveModel(
        connection_id="c", provider=ProviderKind(provider), model_id="m", region="us-east-1", timeout_s=1
    )
    model = model_for(live, SAMPLING)

    # When a case is asked of it
    started = time.monotonic()
    with pytest.raises(ModelCallError) as raised:
        model.complete("q")

    # Then the call gives up after about the connection's timeout, not the SDK's 60 s or more, once
    assert time.monotonic() - started < 5
    assert str(raised.value).startswith(f"could not reach {what}: Read timeout on endpoint URL")
    assert raised.value.retryable is True
