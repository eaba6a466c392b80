"""What the inference APIs share, with no network: reading an answer's JSON, the refusal of an answer
without what was asked, and OpenAI's chat completions (``{"model", "messages", ...}`` answered by
``choices[0].message.content``), which more than one kind of provider speaks.

Each provider kind's own request shapes are in its module (``benchgen/providers/<kind>.py``).
"""

from __future__ import annotations

import json
from typing import Any

from benchgen.inference.model import ModelCallError
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


def chat_text(body: Any) -> str:
    """``choices[0].message.content`` of a chat completion."""
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise unreadable("chat completions", "choices[0].message.content", body) from None
    # A model may answer with no content at all (a refusal, or only a tool call): that is an empty answer.
    return content if isinstance(content, str) else ""


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def chat_usage(body: Any) -> tuple[int | None, int | None]:
    """The prompt and completion tokens a chat completion's ``usage`` counts, where it counts them."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None, None
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


def converse_usage(body: Any) -> tuple[int | None, int | None]:
    """The input and output tokens of a Bedrock Converse answer's ``usage``."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None, None
    return _count(usage.get("inputTokens")), _count(usage.get("outputTokens"))
