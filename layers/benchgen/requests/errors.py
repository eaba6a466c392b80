"""The errors a request is refused with: the message is the answer, the class fixes the HTTP status."""

from __future__ import annotations

from http import HTTPStatus
from typing import ClassVar

from benchgen.errors import BenchGenError


class ApiError(BenchGenError):
    """An error whose message is the answer: the subclass fixes the HTTP status."""

    status: ClassVar[HTTPStatus] = HTTPStatus.BAD_REQUEST


class Forbidden(ApiError):
    status = HTTPStatus.FORBIDDEN


class NotFound(ApiError):
    status = HTTPStatus.NOT_FOUND


class Conflict(ApiError):
    status = HTTPStatus.CONFLICT


class Unprocessable(ApiError):
    status = HTTPStatus.UNPROCESSABLE_ENTITY
