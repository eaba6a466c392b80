"""The named top-level fields of a JSON object, read as a stream of chunks.

Made for the head of detailed_results.json: its summary and breakdowns are small, its per-case list
can be huge. Other fields are skipped without being decoded, and reading stops as soon as every
named field is found.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Collection, Iterator
from typing import Any

from benchgen.errors import too_deep

_DECODER = json.JSONDecoder()
_STRUCTURE = re.compile(r'["{}\[\],]')
_STRING_STOP = re.compile(r'["\\]')


class _Reader:
    """A JSON text read chunk by chunk, keeping only the unread part in memory."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.pos = 0

    def more(self) -> bool:
        """Append the next chunk (dropping what was read); ``False`` at the end of the input."""
        for chunk in self._chunks:
            decoded = self._decoder.decode(chunk)
            if decoded:
                self.text = self.text[self.pos :] + decoded
                self.pos = 0
                return True
        return False

    def peek(self) -> str:
        """The next character that is not whitespace (not consumed)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                raise ValueError("the JSON document ends early")

    def expect(self, character: str) -> None:
        if self.peek() != character:
            raise ValueError(f"expected {character!r} in the JSON document, found {self.peek()!r}")
        self.pos += 1

    def value(self) -> Any:
        """Decode the next whole value (used for the small fields we keep)."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError:
                if not self.more():
                    raise
                continue
            except RecursionError:
                raise ValueError(f"a field of the JSON document {too_deep()}") from None
            # A number at the very end of the buffer may continue in the next chunk.
            if end < len(self.text) or not self.more():
                self.pos = end
                return value

    def skip(self) -> None:
        """Move past the next value without building it (the per-case list can be huge)."""
        self.peek()
        depth = 0
        in_string = False
        while True:
            if self.pos >= len(self.text) and not self.more():
                raise ValueError("the JSON document ends early")
            if in_string:
                stop = _STRING_STOP.search(self.text, self.pos)
                if stop is None:
                    self.pos = len(self.text)
                    continue
                if stop.group() == "\\":
                    if stop.end() >= len(self.text):
                        self.pos = stop.start()
                        if not self.more():
                            raise ValueError("the JSON document ends early")
                        continue
                    self.pos = stop.end() + 1
                    continue
                self.pos = stop.end()
                in_string = False
                if depth == 0:
                    return
                continue
            found = _STRUCTURE.search(self.text, self.pos)
            if found is None:
                self.pos = len(self.text)
                continue
            character = found.group()
            if character == '"':
                in_string = True
                self.pos = found.end()
            elif character in "{[":
                depth += 1
                self.pos = found.end()
            elif depth == 0:
                # A bare number, true, false or null ends where the enclosing object goes on.
                self.pos = found.start()
                return
            elif character in "}]":
                depth -= 1
                self.pos = found.end()
                if depth == 0:
                    return
            else:
                self.pos = found.end()


def pick_top_level_fields(chunks: Iterator[bytes], names: Collection[str]) -> dict[str, Any]:
    """The named fields of the JSON object that ``chunks`` hold, read as a stream.

    Other fields are skipped without being decoded and reading stops once every named field is
    found, so memory stays flat however many cases the document lists.
    """
    wanted = set(names)
    found: dict[str, Any] = {}
    reader = _Reader(chunks)
    reader.expect("{")
    if reader.peek() == "}":
        return found
    while wanted - set(found):
        if reader.peek() != '"':
            raise ValueError("expected a field name in the JSON document")
        name = reader.value()
        reader.expect(":")
        if name in wanted:
            found[name] = reader.value()
        else:
            reader.skip()
        if reader.peek() == "}":
            break
        reader.expect(",")
    return found
