"""The bounds every record keeps to, and the types that apply them.

A DynamoDB item holds at most 400 KB, and much of what a run records comes from its users (a program's
stderr, prediction ids, score keys). So every text, list and map a record keeps is bounded here, once:
longer values are cut with a note saying so, and the steps keep the whole text in a file the run links to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from pydantic import AfterValidator

MAX_TEXT_CHARS = 2000  # one reason, warning or problem
MAX_KEY_CHARS = 200  # one metric or breakdown key
MAX_ITEMS = 50  # entries of one list or map
MAX_CRITERIA = 200  # criteria ids an environment version records
# DynamoDB numbers have magnitudes from 1e-130 to under 1e126: a smaller float failed the write (a 500).

_T = TypeVar("_T")


def clip_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` if it fits, else its start and how much was cut."""
    if len(text) <= limit:
        return text
    note = f" ... [{len(text) - limit} more characters cut]"
    return text[: limit - len(note)] + note


def exceeds_bounds(texts: list[str]) -> bool:
    """Whether a record would show ``texts`` cut short (too long, or too many)."""
    return len(texts) > MAX_ITEMS or any(len(text) > MAX_TEXT_CHARS for text in texts)


def first_items(items: list[str]) -> list[str]:
    """The first ``MAX_ITEMS`` of ``items``, the last of them saying how many more were left out."""
    if len(items) <= MAX_ITEMS:
        return items
    return [*items[: MAX_ITEMS - 1], f"... and {len(items) - MAX_ITEMS + 1} more not shown"]


def all_or_none(limit: int) -> Callable[[list[str] | None], list[str] | None]:
    """A list kept whole or not at all: a list cut short would read as complete."""

    def whole(items: list[str] | None) -> list[str] | None:
        return items if items is None or len(items) <= limit else None

    return whole


def first_of(limit: int) -> Callable[[list[_T]], list[_T]]:
    """A list's first ``limit`` items, for a list whose items say what they are (no note is added)."""

    def first(items: list[_T]) -> list[_T]:
        return items[:limit]

    return first


def first_entries(limit: int) -> Callable[[dict[str, _T]], dict[str, _T]]:
    """A map's first ``limit`` entries, in their order."""

    def first(entries: dict[str, _T]) -> dict[str, _T]:
        return entries if len(entries) <= limit else dict(list(entries.items())[:limit])

    return first


Text = Annotated[str, AfterValidator(clip_text)]
Key = Annotated[str, AfterValidator(lambda key: clip_text(key, MAX_KEY_CHARS))]
Texts = Annotated[list[Text], AfterValidator(first_items)]
