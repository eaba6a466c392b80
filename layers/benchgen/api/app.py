"""The API's resolver: validation on, one router per resource, one place that maps errors."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, cast

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from benchgen.api import (
    connections,
    datasets,
    environments,
    evaluations,
    export_profiles,
    packages,
    preparations,
    runs,
    training_runs,
)
from benchgen.api.cors import ConsoleOrigin
from benchgen.api.errors import register_error_handlers
from benchgen.errors import too_deep
from benchgen.requests.services import ApiServices

_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "true or false"}


class _JsonBodiesOnly(OpenAPIRequestValidationMiddleware):
    """Request validation that reads a body as a JSON object or not at all.

    Powertools also parses form and multipart bodies, and a malformed multipart body escapes its
    validation as a bare ValueError (a 500). This API takes JSON only, so any other declared content
    type is refused up front with a 415 that says what to send. Every body of this API is an object, and
    powertools would validate the first element of an array as the body (it reads form fields that way):
    any other JSON value is refused with a 422 saying so, as is JSON nested past what Python decodes.
    """

    def _get_body(self, app: Any) -> dict[str, Any]:
        content_type = app.current_event.headers.get("content-type", "").strip()
        if content_type and not content_type.lower().startswith("application/json"):
            raise RequestUnsupportedContentType("Unsupported content type", errors=[])
        try:
            body: Any = super()._get_body(app)
        except RecursionError:
            raise _refused_body(f"the body {too_deep()}") from None
        if body is None or isinstance(body, dict):
            if body is not None and _holds_lone_surrogate(app.current_event.decoded_body, body):
                raise _refused_body(
                    "the body holds a \\ud800-\\udfff escape that is half of a character: escape a character "
                    "outside the Basic Multilingual Plane as its pair of surrogates, or send it as UTF-8"
                )
            # None when there is no body at all (powertools' own annotation leaves it out): the route says
            # whether it needs one.
            return cast(dict[str, Any], body)
        kind = _JSON_KINDS.get(type(body), "not an object")
        raise _refused_body(f"the body must be one JSON object ({{...}}), and this one is {kind}")


def _holds_lone_surrogate(text: str, body: dict[str, Any]) -> bool:
    """Whether ``body``, decoded from JSON ``text``, holds a string with a surrogate escaped alone
    (``"\\ud800"``): no UTF-8, and so no table, object or log line, can hold it, and it failed the request
    where it was stored."""
    if "\\u" not in text:  # only an escape can make one
        return False
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _refused_body(message: str) -> RequestValidationError:
    """The 422 of a body that is no JSON object this API can read, saying why."""
    return RequestValidationError([{"type": "body_refused", "loc": ("body",), "msg": message, "input": {}}])


def _json_body(text: str) -> Any:
    """``text`` decoded as JSON, with an integer longer than Python parses read as infinity (below)."""
    return json.loads(text, parse_int=_integer)


def _integer(digits: str) -> int | float:
    # Python refuses to parse an integer of more than 4,300 digits (sys.get_int_max_str_digits), which
    # failed the whole request with a 500. One that long is far past every bound this API has, so it is
    # read as the infinity it is nearest, and the schema refuses it naming its field.
    limit = sys.get_int_max_str_digits()
    if limit and len(digits.lstrip("-")) > limit:
        return -math.inf if digits.startswith("-") else math.inf
    return int(digits)


def _console_origin() -> str | None:
    """The console's origin from the settings of the invocation being answered."""
    services = app.context.get("services")
    return services.settings.console_origin if isinstance(services, ApiServices) else None


app = APIGatewayRestResolver(
    enable_validation=True, cors=ConsoleOrigin(_console_origin), json_body_deserializer=_json_body
)
# Powertools has no public hook for its request validation; the pinned version keeps it here.
app._request_validation_middleware = _JsonBodiesOnly()  # type: ignore[no-untyped-call]
register_error_handlers(app)
app.include_router(environments.router)
app.include_router(runs.router)
app.include_router(datasets.router)
app.include_router(connections.router)
app.include_router(preparations.router)
app.include_router(packages.router)
app.include_router(export_profiles.router)
app.include_router(training_runs.router)
app.include_router(evaluations.router)
