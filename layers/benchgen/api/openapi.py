"""Write the API's OpenAPI document, generated from the resolver: ``python -m benchgen.api.openapi``."""

from __future__ import annotations

import argparse
import json
from importlib import metadata
from pathlib import Path

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
    document = app.get_openapi_json_schema(
        title=TITLE,
        version=metadata.version("benchgen"),
        description="Benchmark environments, runs, and the datasets their results become.",
        security_schemes={_SCHEME: cognito},
        security=[{_SCHEME: []}],
    )
    return json.dumps(json.loads(document), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


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
