"""CORS on the API's answers: only for the console's origin, read from the function's settings per request."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.api.cors import ConsoleOrigin

CONSOLE = "https://d111111abcdef8.cloudfront.net"


def _resolver(allowed: str | None) -> APIGatewayRestResolver:
    app = APIGatewayRestResolver(cors=ConsoleOrigin(lambda: allowed))

    @app.get("/runs")
    def runs() -> dict[str, Any]:
        return {"items": []}

    return app


def _get(app: APIGatewayRestResolver, path: str, origin: str | None) -> dict[str, Any]:
    headers = {"Origin": origin} if origin else {}
    event = {
        "resource": path,
        "path": path,
        "httpMethod": "GET",
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": None,
        "requestContext": {"resourcePath": path, "httpMethod": "GET", "requestId": "req-1", "stage": "v1"},
        "body": None,
        "isBase64Encoded": False,
    }
    answer: dict[str, Any] = app.resolve(event, LambdaContext())
    return answer


def _headers(answer: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = answer["multiValueHeaders"]
    return found


def test_a_call_from_the_console_is_answered_with_its_origin() -> None:
    answer = _get(_resolver(CONSOLE), "/runs", CONSOLE)
    assert answer["statusCode"] == 200
    assert json.loads(answer["body"]) == {"items": []}
    headers = _headers(answer)
    assert headers["Access-Control-Allow-Origin"] == [CONSOLE]
    assert headers["Vary"] == ["Origin"]
    assert "Idempotency-Key" in headers["Access-Control-Allow-Headers"][0].split(",")


def test_a_refusal_to_the_console_carries_its_origin_too() -> None:
    answer = _get(_resolver(CONSOLE), "/no-such-route", CONSOLE)
    assert answer["statusCode"] == 404
    assert _headers(answer)["Access-Control-Allow-Origin"] == [CONSOLE]


def test_another_origin_gets_no_cors_header() -> None:
    answer = _get(_resolver(CONSOLE), "/runs", "https://evil.example")
    assert answer["statusCode"] == 200
    assert "Access-Control-Allow-Origin" not in _headers(answer)


def test_without_a_console_no_origin_is_allowed() -> None:
    answer = _get(_resolver(None), "/runs", CONSOLE)
    assert "Access-Control-Allow-Origin" not in _headers(answer)
    assert "Access-Control-Allow-Origin" not in _get(_resolver(None), "/runs", "null")["multiValueHeaders"]
