"""The checked-in OpenAPI document is the one the resolver generates."""

from __future__ import annotations

import json
from pathlib import Path

from benchgen.api.openapi import render

CHECKED_IN = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_the_checked_in_openapi_document_matches_the_routes() -> None:
    assert CHECKED_IN.exists(), "docs/openapi.json is missing: run `python -m benchgen.api.openapi`"
    assert CHECKED_IN.read_text(encoding="utf-8") == render(), (
        "docs/openapi.json differs from the API's routes: run `python -m benchgen.api.openapi` and commit it"
    )


def test_every_route_requires_the_cognito_user() -> None:
    document = json.loads(render())
    assert document["security"] == [{"cognito": []}]
    assert document["components"]["securitySchemes"]["cognito"]["x-amazon-apigateway-authtype"] == (
        "cognito_user_pools"
    )
    assert sorted((method.upper(), path) for path, item in document["paths"].items() for method in item) == [
        ("DELETE", "/connections/{connection_id}"),
        ("GET", "/connections"),
        ("GET", "/connections/{connection_id}"),
        ("GET", "/datasets"),
        ("GET", "/datasets/{dataset_id}"),
        ("GET", "/environments"),
        ("GET", "/evaluations/{evaluation_id}"),
        ("GET", "/evaluations/{evaluation_id}/report"),
        ("GET", "/export-profiles"),
        ("GET", "/packages/{package_id}"),
        ("GET", "/preparations"),
        ("GET", "/preparations/{preparation_id}"),
        ("GET", "/preparations/{preparation_id}/coverage"),
        ("GET", "/preparations/{preparation_id}/examples"),
        ("GET", "/preparations/{preparation_id}/packages"),
        ("GET", "/runs"),
        ("GET", "/runs/{run_id}"),
        ("GET", "/runs/{run_id}/config"),
        ("GET", "/runs/{run_id}/detailed-results"),
        ("GET", "/runs/{run_id}/files"),
        ("GET", "/training-runs"),
        ("GET", "/training-runs/{training_run_id}"),
        ("GET", "/training-runs/{training_run_id}/evaluations"),
        ("POST", "/connections"),
        ("POST", "/environments"),
        ("POST", "/preparations"),
        ("POST", "/preparations/{preparation_id}/packages"),
        ("POST", "/runs"),
        ("POST", "/runs/{run_id}/dataset"),
        ("POST", "/training-runs"),
        ("POST", "/training-runs/{training_run_id}/cancel"),
        ("POST", "/training-runs/{training_run_id}/evaluation-grants"),
        ("POST", "/training-runs/{training_run_id}/evaluations"),
    ]
