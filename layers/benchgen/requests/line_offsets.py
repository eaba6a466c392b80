"""Paging through a JSON-lines object by byte offset: a page's next_token is where the next page starts.

Reading page n+1 then fetches the object from that byte on, instead of streaming (and skipping) every
line before it, so a deep page costs what a first page costs.
"""

from __future__ import annotations

from collections.abc import Iterator

from benchgen.ports.pages import InvalidNextToken, decode_token, encode_token

_POSITION = ("offset",)


def offset_of(next_token: str | None) -> int:
    """The byte a page starts at: 0 without a token; InvalidNextToken for a token that holds no offset."""
    if next_token is None:
        return 0
    offset = decode_token(next_token, _POSITION)["offset"]
    if not offset.isdigit():
        raise InvalidNextToken()
    return int(offset)


def token_for(offset: int) -> str:
    return encode_token({"offset": str(offset)})


class LineOffsets:
    """Lines read from byte ``start`` on (each with its line end), remembering where the last one starts."""

    def __init__(self, lines: Iterator[bytes], start: int) -> None:
        self._lines = lines
        self._next = start
        self.read = 0
        # Only the last line's start is ever asked for: one number, so memory stays flat however far it reads.
        self.last_start = start

    def __iter__(self) -> Iterator[bytes]:
        for line in self._lines:
            self.last_start = self._next
            self._next += len(line)
            self.read += 1
            yield line

    def start_of(self, index: int) -> int:
        """Where line ``index`` (counted from the first line read) starts; only the last one is known."""
        if index != self.read - 1:
            raise RuntimeError(f"the start of line {index} was not kept; only that of line {self.read - 1}")
        return self.last_start
