"""One page of a listing, and the opaque ``next_token`` that leads to the next.

A token is base64 of the JSON position (the last item's key attributes, or a byte offset); a token no
listing handed out raises :class:`InvalidNextToken`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from benchgen.errors import BenchGenError

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class Page(Generic[ModelT]):
    """One page of a listing; ``next_token`` is ``None`` on the last page."""

    items: list[ModelT]
    next_token: str | None = None


class InvalidNextToken(BenchGenError):
    """A ``next_token`` that is not one a listing gave out (mangled, or from another listing)."""

    def __init__(self) -> None:
        super().__init__(
            "next_token is not one this listing returned: pass the next_token of the previous page "
            "unchanged, or leave it out to start from the newest"
        )


def encode_token(position: Mapping[str, str]) -> str:
    raw = json.dumps(dict(position), sort_keys=True, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str, expected_keys: Collection[str]) -> dict[str, str]:
    """The position a token holds; raises :class:`InvalidNextToken` unless it has exactly these keys."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        position = json.loads(raw)
    except (binascii.Error, ValueError, RecursionError):
        raise InvalidNextToken() from None
    if (
        not isinstance(position, dict)
        or set(position) != set(expected_keys)
        or not all(isinstance(value, str) and value for value in position.values())
    ):
        raise InvalidNextToken()
    return position
