"""What the inference APIs share, with no network: reading an answer's JSON, the refusal of an answer
without what was asked, and OpenAI's chat completions (``{"model", "messages", ...}`` answered by
``choices[0].message.content``), which more than one kind of provider speaks.

Each provider kind's own request shapes are in its module (``benchgen/providers/<kind>.py``).
"""

from __future__ import annotations

import json
from typing import Any

from benchgen.inference.model import Answer, ModelCallError
from benchgen.vocabulary import Sampling

_RAW_PREVIEW = 300


def unreadable(api: str, expected: str, raw: Any) -> ModelCallError:
    """The refusal of an ``api`` answer ``raw`` that lacks ``expected``."""
    preview = (raw if isinstance(raw, str) else json.dumps(raw, default=str))[:_RAW_PREVIEW]
    return ModelCallError(
        f"the {api} answer had no {expected} (it began {preview!r}): check that the model id or endpoint "
        "serves this API",
        retryable=False,
    )


def parse_json(raw: str, source: str, hint: str = "") -> Any:
    """A model's answer body as JSON; a ModelCallError naming ``source`` (and ``hint``) when it is not."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise ModelCallError(
            f"{source} did not answer JSON (it began {raw[:_RAW_PREVIEW]!r}){hint}", retryable=False
        ) from None


def _chat_options(sampling: Sampling) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if sampling.max_tokens is not None:
        options["max_tokens"] = sampling.max_tokens
    if sampling.temperature is not None:
        options["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        options["top_p"] = sampling.top_p
    if sampling.stop:
        options["stop"] = list(sampling.stop)
    return options


def chat_request(model_id: str | None, prompt: str, sampling: Sampling) -> dict[str, Any]:
    """An OpenAI chat completions body (``model_id`` None: without ``model``, as a server of one model
    such as a SageMaker endpoint's Messages API takes it)."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}], **_chat_options(sampling)}
    if model_id is not None:
        body = {"model": model_id, **body}
    return body


def _chat_message(body: Any) -> dict[str, Any]:
    try:
        message = body["choices"][0]["message"]
        content = message["content"]
    except (KeyError, IndexError, TypeError):
        raise unreadable("chat completions", "choices[0].message.content", body) from None
    # A model may answer with no content at all (a refusal, or only a tool call): that is an empty answer.
    return {**message, "content": content if isinstance(content, str) else ""}


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def chat_usage(body: Any) -> tuple[int | None, int | None]:
    """The prompt and completion tokens a chat completion's ``usage`` counts, where it counts them."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None, None
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


# Where OpenAI-compatible servers put a reasoning model's reasoning beside ``content``: vLLM (before
# 0.11) and DeepSeek's API in ``reasoning_content``, vLLM since in ``reasoning``.
CHAT_REASONING_FIELDS = ("reasoning_content", "reasoning")


def chat_answer(body: Any, raw: str) -> Answer:
    """A chat completion's answer: ``choices[0].message.content``, the reasoning given beside it, and its
    tokens, the reasoning ones being ``usage.completion_tokens_details.reasoning_tokens`` (OpenAI counts
    them inside ``completion_tokens``, which is what is billed)."""
    message = _chat_message(body)
    given = (message.get(name) for name in CHAT_REASONING_FIELDS)
    reasoning = next((text for text in given if isinstance(text, str) and text), None)
    input_tokens, output_tokens = chat_usage(body)
    usage = body.get("usage")
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    reasoning_tokens = _count(details.get("reasoning_tokens")) if isinstance(details, dict) else None
    return Answer(
        text=message["content"],
        raw=raw,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        reasoning=reasoning,
        reasoning_tokens=reasoning_tokens,
    )


def converse_usage(body: Any) -> tuple[int | None, int | None]:
    """The input and output tokens of a Bedrock Converse answer's ``usage``."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None, None
    return _count(usage.get("inputTokens")), _count(usage.get("outputTokens"))
