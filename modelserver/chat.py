"""OpenAI's chat completions body, read into a generation request, and the completion written back."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from modelserver.generation import DEFAULT_MAX_TOKENS, Completion, Request, Sampling

ROLES = ("system", "user", "assistant")
MAX_TOKENS_LIMIT = 4096
MAX_STOPS = 4


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
    if body.get("n", 1) != 1:
        raise BadRequest("this server answers one choice per request: leave n out or 1")
    return Request(
        model=model,
        messages=_messages(body.get("messages")),
        max_tokens=_max_tokens(body),
        sampling=Sampling(
            temperature=_number(body, "temperature", 0.0, low=0.0, high=2.0),
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
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    if value is None:
        return DEFAULT_MAX_TOKENS
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_TOKENS_LIMIT:
        raise BadRequest(f"max_tokens must be a whole number from 1 to {MAX_TOKENS_LIMIT}, not {value!r}")
    return value


def _number(
    body: dict[str, Any], name: str, default: float, *, low: float, high: float, low_open: bool = False
) -> float:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise BadRequest(f"{name} must be a number, not {value!r}")
    if value > high or value < low or (low_open and value == low):
        span = f"above {low}" if low_open else f"from {low}"
        raise BadRequest(f"{name} must be {span} up to {high}, not {value}")
    return float(value)


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
