"""Errors as answers: statuses, and validation problems that name the field to fix."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from benchgen.api.errors import responses, validation_answer
from benchgen.requests.errors import Conflict, Forbidden, NotFound


def _body(error: RequestValidationError) -> Any:
    answer = validation_answer(error)
    assert answer.status_code == 422
    return answer.body


def test_each_domain_error_has_its_status() -> None:
    assert (NotFound.status, Forbidden.status, Conflict.status) == (404, 403, 409)


def test_a_validation_error_names_the_field_and_where_it_is() -> None:
    error = RequestValidationError(
        [
            {
                "loc": ("query", "limit"),
                "type": "less_than_equal",
                "msg": "Input should be less than or equal to 100",
            }
        ]
    )
    body = _body(error)
    assert body["errors"] == [
        {"location": "query", "field": "limit", "message": "Input should be less than or equal to 100"}
    ]
    assert body["message"] == "the request is invalid: query.limit: Input should be less than or equal to 100"


def test_a_nested_field_is_named_by_its_path() -> None:
    error = RequestValidationError(
        [
            {
                "loc": ("body", "run_config", "sampling", "t"),
                "type": "float_parsing",
                "msg": "Input should be a number",
            }
        ]
    )
    assert _body(error)["errors"] == [
        {"location": "body", "field": "run_config.sampling.t", "message": "Input should be a number"}
    ]


def test_a_validators_own_sentence_replaces_pydantics_prefix() -> None:
    error = RequestValidationError(
        [
            {
                "loc": ("body", "filename"),
                "type": "value_error",
                "msg": "Value error, must end in .zip",
                "ctx": {"error": ValueError("must end in .zip")},
            }
        ]
    )
    assert _body(error)["errors"] == [
        {"location": "body", "field": "filename", "message": "must end in .zip"}
    ]


def test_the_submitted_value_is_not_echoed() -> None:
    error = RequestValidationError(
        [
            {
                "loc": ("body", "run_config"),
                "type": "dict_type",
                "msg": "Input should be a dict",
                "input": "s3cr3t",
            }
        ]
    )
    assert "s3cr3t" not in json.dumps(_body(error))


def test_a_body_that_is_not_json_is_named_as_the_body() -> None:
    error = RequestValidationError([{"loc": ("body", 1), "type": "json_invalid", "msg": "JSON decode error"}])
    assert _body(error)["errors"] == [
        {"location": "body", "field": "body", "message": "the body is not valid JSON"}
    ]


def test_documented_responses_list_the_success_and_every_error() -> None:
    documented = responses(201, 404, 409)
    assert sorted(documented) == [201, 401, 404, 409, 422]
    assert documented[201] == {"description": "Created"}
