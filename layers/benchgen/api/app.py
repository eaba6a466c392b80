"""The API's resolver: validation on, one router per resource, one place that maps errors."""

from __future__ import annotations

import importlib
import json
import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any, cast

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

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


# The routers (modules of benchgen.api) that answer a path, by its first segment. A request imports those
# of its own resource, with the request logic and bodies they name, at the resource's first request: the
# function's start imports none. A path whose segment is not here is no route's, and answered 404 as before.
ROUTERS: dict[str, tuple[str, ...]] = {
    "environments": ("environments",),
    "runs": ("runs", "datasets"),
    "datasets": ("datasets",),
    "connections": ("connections",),
    "preparations": ("preparations", "packages"),
    "packages": ("packages",),
    "export-profiles": ("export_profiles",),
    "training-runs": ("training_runs", "evaluations"),
    "evaluations": ("evaluations",),
}


class _RoutersOnDemand(APIGatewayRestResolver):
    """The API's resolver, which includes a resource's routers when a request for that resource comes."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._included: set[str] = set()

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        if event.get("httpMethod") == "OPTIONS":
            # A preflight's Access-Control-Allow-Methods names every method the API has. API Gateway answers
            # preflights itself, so the deployed function never pays for this.
            self.include_every_router()
        else:
            resource = str(event.get("path") or "").removeprefix("/").split("/")[0]
            self.include_routers(ROUTERS.get(resource, ()))
        answer: dict[str, Any] = super().resolve(event, context)
        return answer

    def include_routers(self, names: Iterable[str]) -> None:
        """Include the routers of these modules of benchgen.api, each once."""
        for name in names:
            if name not in self._included:
                self.include_router(importlib.import_module(f"benchgen.api.{name}").router)
                self._included.add(name)

    def include_every_router(self) -> None:
        """Include every router, as the OpenAPI document lists them all."""
        self.include_routers(dict.fromkeys(name for names in ROUTERS.values() for name in names))


app = _RoutersOnDemand(
    enable_validation=True, cors=ConsoleOrigin(_console_origin), json_body_deserializer=_json_body
)
# Powertools has no public hook for its request validation; the pinned version keeps it here.
app._request_validation_middleware = _JsonBodiesOnly()  # type: ignore[no-untyped-call]
register_error_handlers(app)
