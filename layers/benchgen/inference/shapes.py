"""Request bodies and answer extraction for the three inference APIs, with no network.

- Bedrock Converse: ``messages`` of content blocks, ``inferenceConfig`` in camelCase; the answer is
  ``output.message.content[].text``.
- SageMaker endpoints serving TGI or LMI: ``{"inputs", "parameters"}`` answered by
  ``[{"generated_text"}]``, or the Messages API (TGI 1.4 and later), answered like a chat completion.
- OpenAI-compatible chat completions: ``{"model", "messages", ...}`` answered by
  ``choices[0].message.content``.
"""

from __future__ import annotations

import json
from typing import Any

from benchgen.inference.model import ModelCallError
from benchgen.vocabulary import Sampling

_RAW_PREVIEW = 300


def _unreadable(api: str, expected: str, raw: Any) -> ModelCallError:
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


def converse_request(model_id: str, prompt: str, sampling: Sampling) -> dict[str, Any]:
    """Keyword arguments of ``bedrock-runtime.converse``."""
    config: dict[str, Any] = {}
    if sampling.max_tokens is not None:
        config["maxTokens"] = sampling.max_tokens
    if sampling.temperature is not None:
        config["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        config["topP"] = sampling.top_p
    if sampling.stop:
        config["stopSequences"] = list(sampling.stop)
    request: dict[str, Any] = {
        "modelId": model_id,
        "messages": [{"role": "user", "content": [{"text": prompt}]}],
    }
    if config:
        request["inferenceConfig"] = config
    return request


def converse_text(response: dict[str, Any]) -> str:
    """The text blocks of a Converse answer, joined."""
    try:
        blocks = response["output"]["message"]["content"]
        return "".join(block["text"] for block in blocks if "text" in block)
    except (KeyError, TypeError):
        raise _unreadable("Bedrock Converse", "output.message.content", response) from None


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
    """An OpenAI chat completions body (the SageMaker Messages API takes it without ``model``)."""
    body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}], **_chat_options(sampling)}
    if model_id is not None:
        body = {"model": model_id, **body}
    return body


def chat_text(body: Any) -> str:
    """``choices[0].message.content`` of a chat completion."""
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _unreadable("chat completions", "choices[0].message.content", body) from None
    # A model may answer with no content at all (a refusal, or only a tool call): that is an empty answer.
    return content if isinstance(content, str) else ""


def generate_request(prompt: str, sampling: Sampling) -> dict[str, Any]:
    """A TGI / LMI ``{"inputs", "parameters"}`` body; only the continuation is asked for."""
    parameters: dict[str, Any] = {"return_full_text": False}
    if sampling.max_tokens is not None:
        parameters["max_new_tokens"] = sampling.max_tokens
    if sampling.temperature is not None:
        parameters["temperature"] = sampling.temperature
        # TGI refuses temperature 0; greedy decoding is how it asks for the same thing.
        if sampling.temperature == 0:
            del parameters["temperature"]
            parameters["do_sample"] = False
    if sampling.top_p is not None and sampling.top_p < 1:
        parameters["top_p"] = sampling.top_p
    if sampling.stop:
        parameters["stop"] = list(sampling.stop)
    return {"inputs": prompt, "parameters": parameters}


def generated_text(body: Any) -> str:
    """The text of a TGI / LMI answer: ``[{"generated_text"}]``, or one such object."""
    first = body[0] if isinstance(body, list) and body else body
    if isinstance(first, dict) and isinstance(first.get("generated_text"), str):
        return str(first["generated_text"])
    raise _unreadable("SageMaker endpoint", "generated_text", body)
