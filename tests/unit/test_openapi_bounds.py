"""Every number a request can carry is bounded at both ends by its schema, so the OpenAPI document states
the bound and the API answers 422 past it (DynamoDB numbers hold 38 digits: an unbounded one was a 500)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from benchgen.api.openapi import render

_COMBINATIONS = ("anyOf", "oneOf", "allOf", "prefixItems")
_NUMBERS = ("integer", "number")
# A schema with none of these says nothing about its value: it admits any JSON, numbers of any size too.
_CONSTRAINING = ("type", "$ref", "enum", "const", *_COMBINATIONS)


def _unbounded(
    schema: dict[str, Any], where: str, components: dict[str, Any], seen: frozenset[str]
) -> Iterator[str]:
    """Where, under ``schema``, a number (or any value at all) is admitted without a bound at each end."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            yield from _unbounded(components[name], f"{where}<{name}>", components, seen | {name})
        return
    if not any(key in schema for key in _CONSTRAINING):
        yield f"{where}: admits any value"
        return
    kinds = schema.get("type")
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind in _NUMBERS:
            low = "minimum" in schema or "exclusiveMinimum" in schema
            high = "maximum" in schema or "exclusiveMaximum" in schema
            if not (low and high):
                yield f"{where}: {kind} without a {'maximum' if low else 'minimum'}"
    for name, child in (schema.get("properties") or {}).items():
        yield from _unbounded(child, f"{where}.{name}", components, seen)
    for pattern, child in (schema.get("patternProperties") or {}).items():
        yield from _unbounded(child, f"{where}{{{pattern}}}", components, seen)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _unbounded(extra, f"{where}{{*}}", components, seen)
    elif extra is True or (kinds == "object" and extra is None and not schema.get("properties")):
        # Without additionalProperties false, a member no pattern names may hold anything.
        yield f"{where}: an object that admits any member"
    if isinstance(schema.get("items"), dict):
        yield from _unbounded(schema["items"], f"{where}[]", components, seen)
    for combination in _COMBINATIONS:
        for index, child in enumerate(schema.get(combination) or []):
            yield from _unbounded(child, f"{where}|{index}", components, seen)


def _request_problems(document: dict[str, Any]) -> list[str]:
    components = document["components"]["schemas"]
    problems: list[str] = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            route = f"{method.upper()} {path}"
            for parameter in operation.get("parameters", []):
                where = f"{route} {parameter['in']} {parameter['name']}"
                problems += _unbounded(parameter.get("schema", {}), where, components, frozenset())
            for media, content in (operation.get("requestBody") or {}).get("content", {}).items():
                problems += _unbounded(
                    content.get("schema", {}), f"{route} body ({media})", components, frozenset()
                )
    return problems


def test_every_number_a_request_can_carry_has_a_documented_minimum_and_maximum() -> None:
    assert _request_problems(json.loads(render())) == []


def test_the_walk_finds_an_unbounded_number_wherever_a_request_schema_puts_it() -> None:
    # Given a document whose request schemas hide unbounded numbers in each place a schema can nest one
    document = {
        "components": {
            "schemas": {
                "Spec": {
                    "type": "object",
                    "properties": {
                        "seed": {"type": "integer", "minimum": 0},
                        "bounded": {"type": "number", "minimum": 0, "maximum": 1},
                        "values": {"type": "object", "additionalProperties": {"type": "number"}},
                        "named": {
                            "type": "object",
                            "patternProperties": {"^a$": {"type": "integer"}},
                            "additionalProperties": False,
                        },
                        "list": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
                        "free": {},
                        "loose": {"type": "object"},
                    },
                }
            }
        },
        "paths": {
            "/things": {
                "post": {
                    "parameters": [
                        {"in": "query", "name": "limit", "schema": {"type": "integer", "maximum": 5}}
                    ],
                    "requestBody": {
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Spec"}}}
                    },
                }
            }
        },
    }

    # When it is walked, then each one is named, and the bounded number is not
    assert _request_problems(document) == [
        "POST /things query limit: integer without a minimum",
        "POST /things body (application/json)<Spec>.seed: integer without a maximum",
        "POST /things body (application/json)<Spec>.values{*}: number without a minimum",
        "POST /things body (application/json)<Spec>.named{^a$}: integer without a minimum",
        "POST /things body (application/json)<Spec>.list[]|0: number without a minimum",
        "POST /things body (application/json)<Spec>.free: admits any value",
        "POST /things body (application/json)<Spec>.loose: an object that admits any member",
    ]


def test_a_map_whose_names_follow_a_pattern_is_stated_as_property_names_with_its_values() -> None:
    # patternProperties with no other member allowed reads, to the console's type generator, as an object
    # that holds nothing: the hyperparameters it sends would not type-check
    document = json.loads(render())
    hyperparameters = document["components"]["schemas"]["CreateTrainingRunRequest"]["properties"][
        "hyperparameters"
    ]

    assert "patternProperties" not in json.dumps(document)
    assert hyperparameters["propertyNames"] == {"pattern": "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"}
    assert {branch["type"] for branch in hyperparameters["additionalProperties"]["anyOf"]} == {
        "number",
        "string",
    }
