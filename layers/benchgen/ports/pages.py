"""One page of a listing, and the token that leads to the next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class Page(Generic[ModelT]):
    """One page of a listing; ``next_token`` is ``None`` on the last page."""

    items: list[ModelT]
    next_token: str | None = None
