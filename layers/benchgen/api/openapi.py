"""Write the API's OpenAPI document, generated from the resolver: ``python -m benchgen.api.openapi``."""

from __future__ import annotations

import argparse
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn

from benchgen.api.app import app

TITLE = "BenchGen API"
DEFAULT_OUTPUT = Path("docs/openapi.json")
_SCHEME = "cognito"


def render() -> str:
    """The document as checked in: sorted keys, two-space indent, trailing newline."""
    cognito = APIKey(
        type_="apiKey",
        name="Authorization",
        in_=APIKeyIn.header,
        description="A Cognito user pool ID token, checked by API Gateway's Cognito authorizer.",
        openapi_extensions={"x-amazon-apigateway-authtype": "cognito_user_pools"},
    )
    app.include_every_router()
    document = app.get_openapi_json_schema(
        title=TITLE,
        version=metadata.version("benchgen"),
        description="Benchmark environments, runs, and the datasets their results become.",
        security_schemes={_SCHEME: cognito},
        security=[{_SCHEME: []}],
    )
    stated = _names_as_property_names(json.loads(document))
    return json.dumps(stated, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _names_as_property_names(schema: Any) -> Any:
    """``schema`` with each map whose member names follow one pattern (pydantic writes it as that pattern
    under ``patternProperties`` and no other member) stated as ``propertyNames`` and
    ``additionalProperties``: the same constraint, in the form the console's type generator reads as a
    map of those values rather than as an object that holds nothing."""
    if isinstance(schema, list):
        return [_names_as_property_names(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    stated = {key: _names_as_property_names(value) for key, value in schema.items()}
    patterns = stated.get("patternProperties")
    if isinstance(patterns, dict) and len(patterns) == 1 and stated.get("additionalProperties") is False:
        ((pattern, values),) = patterns.items()
        del stated["patternProperties"]
        stated["propertyNames"] = {"pattern": pattern}
        stated["additionalProperties"] = values
    return stated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchgen.api.openapi", description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUTPUT, help=f"default: {DEFAULT_OUTPUT}")
    arguments = parser.parse_args(argv)
    out: Path = arguments.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
