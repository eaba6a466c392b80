"""The local console server: the built app, its /config.json, and the API and Cognito behind one origin."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcloud.api_server import _Answer
from localcloud.console_server import ConsoleServer


class _Api:
    """Stands in for ApiServer.respond: records what it was asked and answers with a JSON body."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, bytes]] = []

    def respond(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes) -> _Answer:
        self.asked.append((method, path, body))
        return _Answer.json(200, {"path": path}, {"X-Request": "seen"})


def _cognito(target: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return 200, {"target": target, "flow": body.get("AuthFlow")}


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    (tmp_path / "dist" / "assets").mkdir(parents=True)
    (tmp_path / "dist" / "index.html").write_text("<!doctype html><title>app</title>")
    (tmp_path / "dist" / "assets" / "app.js").write_text("console.log(1)")
    (tmp_path / "secret.txt").write_text("outside the build")
    return tmp_path / "dist"


@pytest.fixture
def served(dist: Path) -> Iterator[tuple[ConsoleServer, _Api]]:
    api = _Api()
    server = ConsoleServer(
        dist,
        api,  # type: ignore[arg-type]  # only respond() is called
        _cognito,
        region="eu-west-1",
        user_pool_id="eu-west-1_pool",
        client_id="client",
        frame_origin="http://127.0.0.1:5000",
    )
    with server:
        yield server, api


def _get(url: str, method: str = "GET", body: bytes | None = None, **headers: str) -> tuple[int, Any, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_config_json_names_the_pool_and_the_same_origin_api(served: tuple[ConsoleServer, _Api]) -> None:
    server, _ = served
    status, headers, body = _get(server.url + "/config.json")
    assert status == 200
    assert headers["Cache-Control"] == "no-store"
    assert json.loads(body) == {
        "apiUrl": server.url + "/api",
        "region": "eu-west-1",
        "userPoolId": "eu-west-1_pool",
        "userPoolClientId": "client",
        "cognitoEndpoint": server.url + "/cognito",
    }


def test_the_app_is_served_with_its_security_headers_and_nothing_outside_the_build(
    served: tuple[ConsoleServer, _Api],
) -> None:
    server, _ = served
    status, headers, body = _get(server.url + "/assets/app.js")
    assert (status, headers["Content-Type"], body) == (200, "text/javascript", b"console.log(1)")
    csp = headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "frame-src http://127.0.0.1:5000" in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    # An app route, and a path that climbs out of the build, both get the app's index.html.
    for path in ("/runs/abc", "/../secret.txt", "/assets/../../secret.txt"):
        status, _, body = _get(server.url + path)
        assert (status, body) == (200, b"<!doctype html><title>app</title>"), path
    status, _, _ = _get(server.url + "/index.html", method="POST", body=b"{}")
    assert status == 405


def test_api_calls_reach_the_api_server_without_the_prefix(served: tuple[ConsoleServer, _Api]) -> None:
    server, api = served
    status, headers, body = _get(
        server.url + "/api/runs/r1?limit=2", method="POST", body=b'{"a": 1}', Authorization="token"
    )
    assert status == 200 and json.loads(body) == {"path": "/runs/r1?limit=2"}
    assert headers["X-Request"] == "seen"
    assert api.asked == [("POST", "/runs/r1?limit=2", b'{"a": 1}')]


def test_cognito_calls_are_forwarded_by_target(served: tuple[ConsoleServer, _Api]) -> None:
    server, _ = served
    target = "AWSCognitoIdentityProviderService.InitiateAuth"
    status, _, body = _get(
        server.url + "/cognito",
        method="POST",
        body=b'{"AuthFlow": "USER_PASSWORD_AUTH"}',
        **{"X-Amz-Target": target},
    )
    assert status == 200 and json.loads(body) == {"target": target, "flow": "USER_PASSWORD_AUTH"}
    status, _, body = _get(server.url + "/cognito", method="POST", body=b"[1]", **{"X-Amz-Target": target})
    assert status == 400 and json.loads(body)["__type"] == "SerializationException"


def test_an_unbuilt_console_names_the_command_that_builds_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="run `make web` first"):
        ConsoleServer(
            tmp_path,
            _Api(),  # type: ignore[arg-type]
            _cognito,
            region="us-east-1",
            user_pool_id="p",
            client_id="c",
            frame_origin="http://127.0.0.1:5000",
        )
