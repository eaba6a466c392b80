"""The one place that turns every error into an HTTP answer with a message."""

from __future__ import annotations

import binascii
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import ServiceError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from benchgen.api import Unauthenticated
from benchgen.errors import Unsupported
from benchgen.ports.pages import InvalidNextToken
from benchgen.records.bounds import MAX_KEY_CHARS, clip_text
from benchgen.requests.errors import ApiError
from benchgen.requests.path_ids import no_such_id
from benchgen.requests.schemas.errors import ErrorBody, FieldProblem

logger = Logger(child=True)


_DESCRIPTIONS = {
    400: "Bad request (e.g. a next_token that this listing did not hand out)",
    401: "No signed-in user",
    403: "Only the owner (of the run or environment) may do this",
    404: "No such resource",
    409: "The resource's state does not allow this",
    415: "The body is not sent as JSON (Content-Type: application/json)",
    422: "Invalid request fields, a body that is not UTF-8 JSON, or an Idempotency-Key reused with another "
    "body; `errors` names each field to fix",
}


def responses(success: int, *errors: int, body: bool = False) -> dict[int, OpenAPIResponse]:
    """OpenAPI answers of a route: its success (body from the return type) and its error answers.

    401 and 422 can come from every route, so they are always listed; 415 from every route with a body.
    """
    documented: dict[int, OpenAPIResponse] = {success: {"description": HTTPStatus(success).phrase}}
    if success == HTTPStatus.NO_CONTENT:
        documented[success]["content"] = {}  # no body, not even JSON null
    for status in sorted({401, 422, *errors, *([415] if body else [])}):
        documented[status] = {
            "description": _DESCRIPTIONS[status],
            "content": {"application/json": {"model": ErrorBody}},
        }
    return documented


def _answer(status: int, body: ErrorBody) -> Response[Any]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body.model_dump(mode="json"),
    )


def _field_problem(error: Any) -> FieldProblem:
    location, *path = [str(part) for part in error.get("loc", ())] or ["body"]
    kind = error.get("type")
    if kind == "json_invalid":
        return FieldProblem(location="body", field="body", message="the body is not valid JSON")
    if location == "body" and not path and kind == "missing":
        return FieldProblem(location="body", field="body", message="a JSON body is required")
    message = str(error.get("msg", "invalid value"))
    context_error = (error.get("ctx") or {}).get("error")
    if kind == "value_error" and context_error is not None:
        # The validator's own sentence, without pydantic's "Value error, " prefix.
        message = str(context_error)
    # A field's name can be a key the request chose (a map's), as long as the body: it is named, not echoed.
    field = clip_text(".".join(path), MAX_KEY_CHARS) or location
    return FieldProblem(location=location, field=field, message=message)


def validation_answer(error: RequestValidationError) -> Response[Any]:
    """422 naming every field to fix; submitted values are never echoed (a run_config may hold secrets).

    A path id of the wrong shape names nothing, so it is the 404 of an id that nothing has, saying why
    (whatever else the request got wrong): a route answers the same for every id it cannot find."""
    for item in error.errors():
        location = tuple(str(part) for part in item.get("loc", ()))
        if location[:1] == ("path",) and len(location) == 2:
            return _answer(404, ErrorBody(message=no_such_id(location[1], str(item.get("input", "")))))
    problems = [_field_problem(item) for item in error.errors()]
    summary = "; ".join(
        f"{p.location}.{p.field}: {p.message}" if p.field != p.location else f"{p.location}: {p.message}"
        for p in problems
    )
    return _answer(422, ErrorBody(message=f"the request is invalid: {summary}", errors=problems))


def _body_is_text(event: Any) -> bool:
    try:
        _ = event.decoded_body
    except (UnicodeDecodeError, binascii.Error):
        return False
    return True


def register_error_handlers(app: APIGatewayRestResolver) -> None:
    """Map domain errors to statuses; anything unexpected becomes a 500 that names the request id."""

    def api_error(error: ApiError) -> Response[Any]:
        return _answer(error.status, ErrorBody(message=str(error)))

    def unsupported(error: Unsupported) -> Response[Any]:
        # A request outside a connection's profile: the message says what would be accepted.
        return _answer(HTTPStatus.BAD_REQUEST, ErrorBody(message=str(error)))

    def bad_token(error: InvalidNextToken) -> Response[Any]:
        return _answer(HTTPStatus.BAD_REQUEST, ErrorBody(message=str(error)))

    def unauthenticated(error: Unauthenticated) -> Response[Any]:
        return _answer(HTTPStatus.UNAUTHORIZED, ErrorBody(message=str(error)))

    def unsupported_content_type(error: RequestUnsupportedContentType) -> Response[Any]:
        return _answer(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            ErrorBody(message="send the body as JSON, with the header Content-Type: application/json"),
        )

    def undecodable(error: UnicodeDecodeError) -> Response[Any]:
        # Only a body that cannot be read as text is the client's doing; any other decoding error is ours.
        if _body_is_text(app.current_event):
            return unexpected(error)
        problem = FieldProblem(location="body", field="body", message="the body is not UTF-8 text")
        return _answer(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            ErrorBody(
                message="the request is invalid: send the JSON body encoded as UTF-8", errors=[problem]
            ),
        )

    def service_error(error: ServiceError) -> Response[Any]:
        # Powertools' own answers (an unknown route is its NotFoundError): keep their status and text.
        return _answer(error.status_code, ErrorBody(message=error.msg))

    def unexpected(error: Exception) -> Response[Any]:
        request_id = app.current_event.request_context.request_id
        logger.exception("unhandled error while answering an API request")
        return _answer(
            HTTPStatus.INTERNAL_SERVER_ERROR,
            ErrorBody(message=f"internal error; quote request id {request_id} when reporting it"),
        )

    # The most specific registered class wins, so Exception only catches what nothing else names.
    handlers: list[tuple[type[Exception], Callable[[Any], Response[Any]]]] = [
        (ApiError, api_error),
        (InvalidNextToken, bad_token),
        (Unsupported, unsupported),
        (Unauthenticated, unauthenticated),
        (RequestUnsupportedContentType, unsupported_content_type),
        (RequestValidationError, validation_answer),
        (UnicodeDecodeError, undecodable),
        (ServiceError, service_error),
        (Exception, unexpected),
    ]
    for error_class, handler in handlers:
        app.exception_handler(error_class)(handler)
