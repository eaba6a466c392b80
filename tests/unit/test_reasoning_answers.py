"""A reasoning model's answer as each provider gives it: the reasoning kept apart from the answer text,
and the tokens the provider counted as reasoning recorded beside the answer's."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from benchgen.aws.providers import bedrock as bedrock_adapter
from benchgen.aws.providers.openai_compatible import ChatCompletions
from benchgen.inference.shapes import chat_answer
from benchgen.providers import bedrock_batch, openai_batch
from benchgen.vocabulary import Sampling
from localcloud.model_server import BASE_MODEL, ExampleModelServer
from tests.unit.test_inference_requests import SAMPLING, stubbed  # noqa: F401 (a fixture)

QUESTION = "What is 6 x 7?"


def _chat_body(message: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        "usage": usage,
    }


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_chat_answer_keeps_the_reasoning_field_apart_and_counts_its_tokens(field: str) -> None:
    # given: vLLM and DeepSeek's reasoning_content, or vLLM's newer reasoning, beside the content
    usage = {
        "prompt_tokens": 9,
        "completion_tokens": 30,
        "completion_tokens_details": {"reasoning_tokens": 27},
    }
    body = _chat_body({"content": "#### 42", field: "6 x 7: maybe 41? No, 42."}, usage)
    # when
    answer = chat_answer(body, json.dumps(body))
    # then
    assert (answer.text, answer.reasoning) == ("#### 42", "6 x 7: maybe 41? No, 42.")
    assert (answer.input_tokens, answer.output_tokens, answer.reasoning_tokens) == (9, 30, 27)


@pytest.fixture
def thinking_server(request: pytest.FixtureRequest) -> Iterator[ExampleModelServer]:
    with ExampleModelServer(thinking=request.param) as server:
        yield server


@pytest.mark.parametrize("thinking_server", ["field", "inline", "cut_off"], indirect=True)
def test_a_chat_completions_call_reads_the_reasoning_as_the_server_gives_it(
    thinking_server: ExampleModelServer,
) -> None:
    # given: the example model server answering as a reasoning model
    model = ChatCompletions(thinking_server.base_url, BASE_MODEL, Sampling())
    # when: asked a question no example holds, over HTTP
    answer = model.complete(QUESTION)
    # then: a reasoning field is kept apart; a block in the content stays as the model wrote it
    reasoning, text = "Nothing I know answers this.", "I do not know the answer to this question."
    expected = {
        "field": (text, reasoning, 5, 5 + 9),
        "inline": (f"<think>\n{reasoning}\n</think>\n{text}", None, 5, 5 + 9),
        "cut_off": (f"<think>\n{reasoning}", None, None, 5),
    }[str(thinking_server.thinking)]
    assert (answer.text, answer.reasoning, answer.reasoning_tokens, answer.output_tokens) == expected


def test_a_bedrock_converse_answer_keeps_its_reasoning_blocks_apart(stubbed: Any) -> None:  # noqa: F811
    # given: Converse's reasoningContent blocks (one readable, one redacted) before the text; botocore's
    # service model checks the answer's shape
    model = bedrock_adapter.BedrockConverse("us-east-1", "deepseek.r1-v1:0", SAMPLING, timeout_s=60)
    stubbed("bedrock-runtime").add_response(
        "converse",
        {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"reasoningContent": {"reasoningText": {"text": "maybe 41", "signature": "sig"}}},
                        {"reasoningContent": {"redactedContent": base64.b64encode(b"hidden")}},
                        {"text": "#### 42"},
                    ],
                }
            },
            "stopReason": "end_turn",
            "usage": {"inputTokens": 5, "outputTokens": 40, "totalTokens": 45},
            "metrics": {"latencyMs": 120},
        },
    )
    # when
    answer = model.complete(QUESTION)
    # then: the text is the answer; the reasoning is the readable block (Converse counts no reasoning
    # tokens apart)
    assert (answer.text, answer.reasoning) == ("#### 42", "maybe 41")
    assert (answer.output_tokens, answer.reasoning_tokens) == (40, None)


def test_batch_answers_keep_the_reasoning_apart() -> None:
    # given: one Bedrock batch output record and one OpenAI Batch API output line of a reasoning model
    converse = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [{"reasoningContent": {"reasoningText": {"text": "maybe 41"}}}, {"text": "42"}],
            }
        },
        "usage": {"inputTokens": 5, "outputTokens": 9},
    }
    usage = {"prompt_tokens": 5, "completion_tokens": 9, "completion_tokens_details": {"reasoning_tokens": 7}}
    chat = _chat_body({"content": "42", "reasoning_content": "maybe 41"}, usage)
    # when
    (bedrock,) = bedrock_batch.BATCH.results({"recordId": "R0000000000", "modelOutput": converse})
    (openai,) = openai_batch.BATCH.results(
        {"custom_id": "R0000000001", "response": {"status_code": 200, "body": chat}, "error": None}
    )
    # then
    assert bedrock.answer is not None and openai.answer is not None
    assert (bedrock.answer.text, bedrock.answer.reasoning) == ("42", "maybe 41")
    assert (openai.answer.text, openai.answer.reasoning, openai.answer.reasoning_tokens) == (
        "42",
        "maybe 41",
        7,
    )
