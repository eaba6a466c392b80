"""OpenAI-compatible chat completions over HTTP (urllib: no dependency beyond the standard library).

The API key is handed in by the caller, who reads it from Secrets Manager when the call is made; it
goes into the Authorization header and nowhere else: no error message or log line carries it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from email.message import Message

from benchgen.inference.model import Answer, ModelCallError
from benchgen.inference.shapes import chat_request, chat_text, parse_json
from benchgen.vocabulary import Sampling

_ERROR_PREVIEW = 300


def retry_after_seconds(headers: Message | None) -> float | None:
    """The wait an HTTP answer's Retry-After header asks for, in seconds, when it gives a number."""
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


class ChatCompletions:
    """``POST {base_url}/chat/completions`` for one model id and sampling."""

    def __init__(
        self,
        base_url: str,
        model_id: str,
        sampling: Sampling,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model_id = model_id
        self._sampling = sampling
        self._api_key = api_key
        self._timeout_s = timeout_s

    def complete(self, prompt: str) -> Answer:
        body = json.dumps(chat_request(self._model_id, prompt, self._sampling)).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # The base URL was checked to be https (or loopback) when the connection was recorded.
        request = urllib.request.Request(self._url, data=body, headers=headers, method="POST")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:  # noqa: S310
                raw = response.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", errors="replace")[:_ERROR_PREVIEW]
            retryable = error.code == 429 or error.code >= 500
            what = "throttled the request" if error.code == 429 else f"answered HTTP {error.code}"
            raise ModelCallError(
                f"{self._url} {what}: {detail}",
                retryable=retryable,
                retry_after=retry_after_seconds(error.headers),
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise ModelCallError(f"could not reach {self._url}: {reason}", retryable=True) from None
        parsed = parse_json(raw, self._url, ": check the base URL")
        return Answer(text=chat_text(parsed), raw=raw)
