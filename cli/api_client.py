"""A client of BenchGen's REST API, as the demos (and the tests) drive it: JSON in and out, with a user's
Cognito ID token, signed in again when the token has expired."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any


class Api:
    """A small client of the REST API at ``url``, signed in with ``token`` (a Cognito ID token).

    Cognito's ID tokens last an hour, and the real loop runs longer: with ``refresh`` (a new ID token from
    the sign-in's refresh token), a call the API refuses with 401 is made once more with a fresh token.
    """

    def __init__(self, url: str, token: str, refresh: Callable[[], str] | None = None) -> None:
        self.url = url
        self.token = token
        self.refresh = refresh

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        status, answer = self._send(method, path, body, headers)
        if status == 401 and self.refresh is not None:
            self.token = self.refresh()
            status, answer = self._send(method, path, body, headers)
        return status, answer

    def _send(
        self, method: str, path: str, body: dict[str, Any] | None, headers: dict[str, str] | None
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 - the URL is the loopback server started here
            self.url + path,
            data=data,
            method=method,
            headers={"Authorization": self.token, "Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def expect(
        self,
        method: str,
        path: str,
        status: int,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        got, answer = self.call(method, path, body, headers)
        if got != status:
            raise RuntimeError(f"{method} {path} answered {got}, expected {status}: {answer}")
        return answer
