"""Every number a request can carry, found in the OpenAPI document rather than listed by hand, sent to the
API function on the local cloud at its extremes: past its bounds, not finite, too long for Python to
parse, too small for DynamoDB, or not a number at all. Each is a 4xx with a JSON body that says what to
fix (a 422 naming the field where the document calls the value invalid); none is ever a 5xx."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from benchgen.api.openapi import render
from tests.integration.factories import Answer, Call

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:together-key-AbCdEf"
MAP_KEY = "x"  # the member a number is sent under, in a map of numbers
PLACEHOLDER = "__number__"
PATH_VALUE = "res-1"  # every path parameter: the numbers are refused before any resource is looked up

# Bodies the routes take, each holding every object on the way to the numbers it carries; a run takes
# either a model to ask or a configuration of its own, so it has one body of each; only a reinforcement
# preparation takes a share of correct cases.
CARRIERS: dict[str, list[dict[str, Any]]] = {
    "/connections": [
        {
            "name": "together",
            "provider": "openai-compatible",
            "base_url": "https://api.together.xyz/v1",
            "secret_arn": SECRET_ARN,
            "timeout_s": 30,
            "profile": {
                "methods": ["demonstration"],
                "model_families": ["*"],
                "export_profiles": ["openai-chat"],
                "limits": {"max_rows": 1000, "max_row_tokens": 1000},
            },
            "prices": {
                "on_demand": {"input_per_million": 1, "output_per_million": 2},
                "batch": {"input_per_million": 0.5, "output_per_million": 1},
            },
            "limits": {"max_in_flight": 4, "requests_per_minute": 60, "tokens_per_minute": 1000},
        }
    ],
    "/runs": [
        {
            "environment_id": "gsm8k",
            "version": "1",
            "model": "m",
            "model_config": {
                "connection_id": "conn-1",
                "model_id": "m",
                "sampling": {"temperature": 0.5, "max_tokens": 64, "top_p": 0.9},
                "limits": {"max_in_flight": 4, "requests_per_minute": 60, "tokens_per_minute": 1000},
                "batch_above_cases": 10,
            },
        },
        {"environment_id": "gsm8k", "version": "1", "model": "m", "run_config": {"sampling": {}}},
    ],
    "/preparations": [
        {
            "environment_id": "gsm8k",
            "environment_version": "1",
            "method": "demonstration",
            "run_ids": ["run-1"],
            "settings": {
                "augmentation_factor": 2,
                "pool_share": 0.5,
                "seed": 7,
                "splits": {"train": 80, "validation": 10, "test": 10},
            },
        },
        {
            "environment_id": "gsm8k",
            "environment_version": "1",
            "method": "reinforcement",
            "run_ids": ["run-1"],
            "settings": {"correct_share": 0.1},
        },
    ],
    "/training-runs": [{"package_id": "pkg-1", "connection_id": "conn-1", "hyperparameters": {}}],
}


@dataclass(frozen=True)
class Number:
    """One number a request can carry: where, and the bounds the document gives it."""

    method: str
    route: str
    location: str  # "body" or "query"
    path: tuple[str, ...]  # the body's members down to it, or the query parameter's name
    schema: dict[str, Any]
    text_too: bool  # the document admits text here as well (a sampling value, a hyperparameter)

    def __str__(self) -> str:
        return f"{self.method} {self.route} {self.location} {'.'.join(self.path)}"

    def admits(self, value: Any) -> bool:
        """Whether the document calls ``value`` valid here."""
        if isinstance(value, str):
            return self.text_too
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return False
        if self.schema["type"] == "integer" and not isinstance(value, int):
            return False
        low, high = self.schema.get("minimum"), self.schema.get("maximum")
        above_low = low is None or value >= low
        if "exclusiveMinimum" in self.schema:
            above_low = value > self.schema["exclusiveMinimum"]
        below_high = high is None or value <= high
        if "exclusiveMaximum" in self.schema:
            below_high = value < self.schema["exclusiveMaximum"]
        return above_low and below_high


def _numbers_under(
    schema: dict[str, Any], path: tuple[str, ...], components: dict[str, Any], text_too: bool = False
) -> Iterator[tuple[tuple[str, ...], dict[str, Any], bool]]:
    if "$ref" in schema:
        yield from _numbers_under(components[schema["$ref"].rsplit("/", 1)[-1]], path, components)
        return
    if schema.get("type") in ("integer", "number"):
        yield path, schema, text_too
    for name, child in (schema.get("properties") or {}).items():
        yield from _numbers_under(child, (*path, name), components)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _numbers_under(schema["additionalProperties"], (*path, MAP_KEY), components)
    for combination in ("anyOf", "oneOf"):
        branches = schema.get(combination) or []
        text = any(branch.get("type") == "string" for branch in branches)
        for child in branches:
            yield from _numbers_under(child, path, components, text)
    for child in schema.get("allOf") or []:
        yield from _numbers_under(child, path, components)


def numbers(document: dict[str, Any]) -> list[Number]:
    """Every number of every request body and query parameter of ``document``."""
    components = document["components"]["schemas"]
    found: list[Number] = []
    for route, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    for _, schema, text in _numbers_under(parameter["schema"], (), components):
                        found.append(
                            Number(method.upper(), route, "query", (parameter["name"],), schema, text)
                        )
            body = (operation.get("requestBody") or {}).get("content", {}).get("application/json")
            if body:
                for path, schema, text in _numbers_under(body["schema"], (), components):
                    found.append(Number(method.upper(), route, "body", path, schema, text))
    return found


NUMBERS = numbers(json.loads(render()))

# The extremes every number is sent, as JSON text: what each parses to decides whether it is valid there.
EXTREMES = {
    "5,000 digits": "1" + "0" * 4999,
    "39 digits": "1" + "0" * 38,
    "1e400": "1e400",
    "-1e400": "-1e400",
    "1e-200": "1e-200",
    "-1e-200": "-1e-200",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "-1": "-1",
    "a string": '"5"',
    "a boolean": "true",
}


def _parsed(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:  # past the digits Python parses: no bound admits it
        return math.inf


def _cases() -> Iterator[Any]:
    for number in NUMBERS:
        bounds = {
            f"{name} {number.schema[name]:g}": json.dumps(number.schema[name] + step)
            for name, step in (
                ("minimum", -1),
                ("maximum", 1),
                ("exclusiveMinimum", 0),
                ("exclusiveMaximum", 0),
            )
            if name in number.schema
        }
        for name, raw in (EXTREMES | bounds).items():
            yield pytest.param(number, raw, id=f"{number}={name}")


def _set(body: dict[str, Any], path: tuple[str, ...], value: Any) -> bool:
    """Put ``value`` at ``path`` in ``body``; False when the body has no object to hold it."""
    *parents, last = path
    holder: Any = body
    for name in parents:
        holder = holder.get(name) if isinstance(holder, dict) else None
    if not isinstance(holder, dict) or (last != MAP_KEY and last not in holder):
        return False
    holder[last] = value
    return True


def _carrying(number: Number) -> dict[str, Any] | None:
    for carrier in CARRIERS.get(number.route, []):
        body = copy.deepcopy(carrier)
        if _set(body, number.path, PLACEHOLDER):
            return body
    return None


def _send(call: Call, number: Number, raw: str) -> Answer:
    concrete = number.route
    parameters = {}
    for segment in number.route.split("/"):
        if segment.startswith("{"):
            parameters[segment.strip("{}")] = PATH_VALUE
            concrete = concrete.replace(segment, PATH_VALUE)
    if number.location == "query":
        query = {number.path[0]: raw.strip('"')}
        return call(
            number.method, concrete, resource=number.route, path_parameters=parameters or None, query=query
        )
    body = _carrying(number)
    assert body is not None, f"no body of CARRIERS holds {number}: add one"
    text = json.dumps(body).replace(json.dumps(PLACEHOLDER), raw)
    return call(number.method, concrete, resource=number.route, path_parameters=parameters or None, body=text)


def test_the_document_names_the_numbers_of_bodies_and_queries() -> None:
    # A walk that found nothing would make every case below pass by having none
    named = {str(number) for number in NUMBERS}
    assert "POST /connections body prices.on_demand.input_per_million" in named
    assert "POST /connections body profile.limits.max_rows" in named
    assert "POST /runs body model_config.batch_above_cases" in named
    assert "POST /training-runs body hyperparameters.x" in named
    assert "GET /runs query limit" in named


def test_every_number_of_a_body_has_a_body_to_carry_it() -> None:
    assert [str(number) for number in NUMBERS if number.location == "body" and not _carrying(number)] == []


@pytest.mark.parametrize(("number", "raw"), list(_cases()))
def test_a_number_at_its_extremes_is_refused_saying_what_to_fix_never_a_500(
    call: Call, number: Number, raw: str
) -> None:
    # Given one number of one request, sent at one extreme
    # (a query value is text: "5" there is the number 5)
    value = _parsed(raw) if number.location == "body" else _parsed(raw.strip('"'))
    answer = _send(call, number, raw)

    # Then the API never fails with a 5xx, and any refusal is a JSON body saying what was wrong
    assert answer.status < 500, answer.body
    if answer.status >= 400:
        assert answer.body["message"], answer.body
    # And a value the document calls invalid is a 422 naming the field
    if not number.admits(value):
        assert answer.status == 422, answer.body
        assert ".".join(number.path) in {problem["field"] for problem in answer.body["errors"]}, answer.body


CONNECTION = CARRIERS["/connections"][0]


def _connection_with(field: str, raw: str) -> str:
    """The connection's body as JSON text, with ``raw`` as the on-demand price or profile limit ``field``."""
    body = copy.deepcopy(CONNECTION)
    holder = body["prices"]["on_demand"] if field.endswith("per_million") else body["profile"]["limits"]
    holder[field] = PLACEHOLDER
    return json.dumps(body).replace(json.dumps(PLACEHOLDER), raw)


def test_a_price_of_5000_digits_is_refused_naming_it(call: Call) -> None:
    # Given a price longer than Python parses an integer (it was a 500)
    answer = call("POST", "/connections", body=_connection_with("input_per_million", "9" * 5000))

    # Then it is a 422 saying the price is out of bounds
    assert answer.status == 422, answer.body
    assert answer.body["errors"] == [
        {
            "location": "body",
            "field": "prices.on_demand.input_per_million",
            "message": "Input should be a finite number",
        }
    ]


def test_a_price_too_small_to_store_is_refused_stating_the_smallest(call: Call) -> None:
    # Given a price within 0 to 10,000 but below the smallest number DynamoDB stores (it was a 500)
    answer = call("POST", "/connections", body=_connection_with("input_per_million", "1e-200"))

    # Then it is a 422 that states the bound and what to send instead
    assert answer.status == 422, answer.body
    assert answer.body["errors"] == [
        {
            "location": "body",
            "field": "prices.on_demand.input_per_million",
            "message": "must be 0 or at least 1e-130 in magnitude, the smallest number that can be stored: "
            "send 0 instead",
        }
    ]


@pytest.mark.parametrize("raw", ['"5"', "true"])
def test_a_profile_limit_sent_as_text_or_a_boolean_is_refused(call: Call, raw: str) -> None:
    # Given a connection whose profile's max_rows is a string or a boolean, not a number (it was a 201)
    answer = call("POST", "/connections", body=_connection_with("max_rows", raw))

    # Then it is a 422 asking for a number
    assert answer.status == 422, answer.body
    assert answer.body["errors"] == [
        {"location": "body", "field": "profile.limits.max_rows", "message": "Input should be a valid integer"}
    ]


@pytest.mark.parametrize("raw", ['"10"', "true"])
def test_a_runs_batch_threshold_sent_as_text_or_a_boolean_is_refused(call: Call, raw: str) -> None:
    # Given a live run whose batch_above_cases is a string or a boolean, not a number (it was a 201)
    body = copy.deepcopy(CARRIERS["/runs"][0])
    body["model_config"]["batch_above_cases"] = PLACEHOLDER

    # When it is asked for
    answer = call("POST", "/runs", body=json.dumps(body).replace(json.dumps(PLACEHOLDER), raw))

    # Then it is a 422 asking for a number, before the environment or the connection is looked up
    assert answer.status == 422, answer.body
    assert answer.body["errors"] == [
        {
            "location": "body",
            "field": "model_config.batch_above_cases",
            "message": "Input should be a valid integer",
        }
    ]
