"""OpenAI's chat completions body, read into a generation request, and the completion written back."""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from modelserver.engines import Sampling
from modelserver.generation import DEFAULT_MAX_TOKENS, Completion, Request

ROLES = ("system", "user", "assistant")
MAX_TOKENS_LIMIT = 4096
MAX_STOPS = 4
MAX_SEED = 2**63 - 1
# Logits divided by a smaller temperature overflow to infinity and the sampler fails, so a temperature
# below this decodes greedily, as its nearly all-or-nothing distribution would anyway (vLLM does the same).
GREEDY_BELOW = 1e-5
# OpenAI's penalties, which this server does not apply: 0 (no penalty) is all it can honour.
UNAPPLIED = ("frequency_penalty", "presence_penalty")


class BadRequest(ValueError):
    """A request this server refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def read_request(body: Any, served: list[str]) -> Request:
    """The generation request of a chat completions ``body`` for one of the ``served`` model ids."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object with model and messages")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest(f"name the model: one of {', '.join(served)}")
    if model not in served:
        raise BadRequest(f"no model {model!r}: this server serves {', '.join(served)}", status=404)
    if body.get("stream"):
        raise BadRequest("streaming is not supported by this server: leave stream out or false")
    _only(body, "n", 1, "this server answers one choice per request")
    for name in UNAPPLIED:
        _only(body, name, 0, f"{name} is not applied by this server")
    _whole(body, "seed", 0, low=0, high=MAX_SEED)
    return Request(
        model=model,
        messages=_messages(body.get("messages")),
        max_tokens=_max_tokens(body),
        sampling=Sampling(
            temperature=_temperature(body),
            top_p=_number(body, "top_p", 1.0, low=0.0, high=1.0, low_open=True),
        ),
        stop=_stops(body.get("stop")),
    )


def _messages(messages: Any) -> list[dict[str, str]]:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list of {role, content}")
    read = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise BadRequest(f"messages[{index}] needs a role: one of {', '.join(ROLES)}")
        content = message.get("content")
        if isinstance(content, list):  # OpenAI's content parts: only text ones are understood
            if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
                raise BadRequest(f"messages[{index}].content: this server takes text parts only")
            content = "".join(str(p.get("text", "")) for p in content)
        if not isinstance(content, str):
            raise BadRequest(f"messages[{index}].content must be a string")
        read.append({"role": str(message["role"]), "content": content})
    return read


def _max_tokens(body: dict[str, Any]) -> int:
    """OpenAI's newer name wins when both are given; each is checked either way."""
    tokens = _whole(body, "max_tokens", DEFAULT_MAX_TOKENS, low=1, high=MAX_TOKENS_LIMIT)
    return _whole(body, "max_completion_tokens", tokens, low=1, high=MAX_TOKENS_LIMIT)


def _temperature(body: dict[str, Any]) -> float:
    temperature = _number(body, "temperature", 0.0, low=0.0, high=2.0)
    return 0.0 if temperature < GREEDY_BELOW else temperature


def _only(body: dict[str, Any], name: str, allowed: int, why: str) -> None:
    value = body.get(name)
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int | float) or value != allowed
    ):
        raise BadRequest(f"{why}: leave {name} out or {allowed}, not {_shown(value)}")


def _whole(body: dict[str, Any], name: str, default: int, *, low: int, high: int) -> int:
    value = body.get(name)
    return default if value is None else int(checked_number(name, value, low=low, high=high, whole=True))


def _number(
    body: dict[str, Any], name: str, default: float, *, low: float, high: float, low_open: bool = False
) -> float:
    value = body.get(name)
    if value is None:
        return default
    return float(checked_number(name, value, low=low, high=high, low_open=low_open))


def checked_number(
    name: str, value: Any, *, low: float, high: float, whole: bool = False, low_open: bool = False
) -> int | float:
    """``value`` of the field ``name`` if it is a number (a whole one if ``whole``) from ``low`` (above it if
    ``low_open``) up to ``high``; else :class:`BadRequest` naming the field and its bounds."""
    # NaN compares false with every bound, so it is refused before the comparisons could let it through.
    refused = (
        isinstance(value, bool)
        or not isinstance(value, int if whole else int | float)
        or (isinstance(value, float) and not math.isfinite(value))
        or not low <= value <= high
        or (low_open and value == low)
    )
    if refused:
        kind = "a whole number" if whole else "a number"
        span = f"above {low}" if low_open else f"from {low}"
        raise BadRequest(f"{name} must be {kind} {span} up to {high}, not {_shown(value)}")
    return value  # type: ignore[no-any-return]


def _shown(value: Any) -> str:
    """``value`` as a refusal quotes it: at most 40 characters, so a number of thousands of digits is not
    echoed back whole."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def _stops(stop: Any) -> tuple[str, ...]:
    if stop is None:
        return ()
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or len(stops) > MAX_STOPS or not all(isinstance(s, str) for s in stops):
        raise BadRequest(f"stop must be a string or a list of at most {MAX_STOPS} strings")
    return tuple(stops)


def completion_body(request: Request, completion: Completion) -> dict[str, Any]:
    """The chat completion answer OpenAI's clients read (``choices[0].message.content``)."""
    created = int(time.time())
    digest = hashlib.sha256(f"{created}{id(request)}".encode()).hexdigest()[:24]
    return {
        "id": f"chatcmpl-{digest}",
        "object": "chat.completion",
        "created": created,
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": completion.text},
                "finish_reason": completion.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "total_tokens": completion.prompt_tokens + completion.completion_tokens,
        },
    }
