"""Read a results submission as a stream of predictions.

A submission is ``predictions.json`` (``{"predictions": [...], "metadata": {...}}``, keys in any order) or
``predictions.jsonl`` (one prediction a line), either bare or inside a zip. Zips made by hand are
tolerated: ``__MACOSX/`` entries, ``.DS_Store`` files and one enclosing folder are ignored.

Nothing here loads the whole document: ``predictions.json`` is decoded one array element at a time from a
bounded text window, so a million predictions cost the memory of one. One prediction, and the member of a
zip, are bounded too (``MAX_RECORD_CHARS``, ``MAX_MEMBER_BYTES``): a small zip may expand to one huge value.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal

from pydantic import ValidationError

from benchgen.bundle.archive import is_junk
from benchgen.cases import Prediction, validate_prediction
from benchgen.errors import SubmissionError, too_deep

PREDICTION_FILES = ("predictions.json", "predictions.jsonl")
# One prediction (a record of predictions.json, a line of .jsonl, or the metadata) is decoded whole, so
# its size is what memory grows by: a code diff fits easily, a 200 MiB answer does not.
MAX_RECORD_CHARS = 4 * 1024 * 1024
# The predictions file inside a zip, as its header declares (zipfile never reads past the declared size).
MAX_MEMBER_BYTES = 2 * 1024**3
_CHUNK = 1 << 16


def describe_validation_error(where: str, error: ValidationError) -> str:
    """``predictions[17].prediction_text: Input should be a valid string`` (first problem, plus a count)."""
    problems = error.errors()
    first = problems[0]
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
    more = f" (and {len(problems) - 1} more problem(s) in this record)" if len(problems) > 1 else ""
    if not where.endswith("]"):
        path = f": {path.lstrip('.')}" if path else ""
    return f"{where}{path}: {first['msg']}{more}"


def to_prediction(record: object, where: str) -> Prediction:
    """Validate one decoded record; integer ids are accepted and read as their decimal string."""
    if not isinstance(record, dict):
        kind = type(record).__name__ if record is not None else "null"
        raise SubmissionError(
            f'{where}: expected an object like {{"id": ..., "prediction_text": ...}}, got {kind}'
        )
    ident = record.get("id")
    if isinstance(ident, int) and not isinstance(ident, bool):
        record = {**record, "id": str(ident)}
    try:
        return validate_prediction(record)
    except ValidationError as error:
        raise SubmissionError(describe_validation_error(where, error)) from error


_LEADING_ID = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,30})')


def _too_large(where: str, head: str) -> SubmissionError:
    """A record past the limit, named by its id when the id comes early enough to be seen."""
    found = _LEADING_ID.search(head, 0, 4096)
    named = f" (id {found[1]})" if found else ""
    return SubmissionError(
        f"{where}{named} is larger than the limit of {MAX_RECORD_CHARS // 1024**2} MiB for one "
        "prediction; shorten it (a prediction holds the model's answer, not its data)"
    )


class _JsonWindow:
    """A sliding text window over a stream: decode one JSON value at a time, keep line numbers right."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self._stream = stream
        self._name = name
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._lines_dropped = 0
        self._decoder = json.JSONDecoder()

    def _compact(self) -> None:
        """Drop the text already consumed; only between values, so offsets inside a value stay valid."""
        if self._pos > _CHUNK:
            self._lines_dropped += self._buf.count("\n", 0, self._pos)
            self._buf = self._buf[self._pos :]
            self._pos = 0

    def _fill(self, at_least: int = _CHUNK) -> bool:
        if self._eof:
            return False
        data = self._stream.read(max(at_least, _CHUNK))
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    def location(self, pos: int | None = None) -> str:
        at = self._pos if pos is None else pos
        line = self._lines_dropped + self._buf.count("\n", 0, at) + 1
        column = at - (self._buf.rfind("\n", 0, at) + 1) + 1
        return f"line {line}, column {column}"

    def fail(self, message: str, pos: int | None = None) -> SubmissionError:
        return SubmissionError(f"{self._name}: {message} ({self.location(pos)})")

    def too_large(self, what: str) -> SubmissionError:
        return _too_large(
            f"{self._name}: {what} ({self.location()})", self._buf[self._pos : self._pos + 4096]
        )

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end of the stream)."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in " \t\r\n":
                self._pos += 1
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            self._compact()
            if not self._fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        char = self.peek()
        if char == "" or char not in chars:
            found = "the end of the file" if char == "" else repr(char)
            raise self.fail(f"expected {what}, found {found}")
        self._pos += 1
        return char

    def value(self, what: str) -> Any:
        """Decode the next JSON value, reading more text until it is complete."""
        self.peek()
        self._compact()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as error:
                pending = len(self._buf) - self._pos
                if pending > MAX_RECORD_CHARS:
                    raise self.too_large(what) from None
                # Read as much again as the partial value holds, so a long value costs O(n) re-parsing.
                if self._fill(min(pending, MAX_RECORD_CHARS)):
                    continue
                raise self.fail(f"invalid JSON in {what}: {error.msg}", error.pos) from error
            except RecursionError:
                raise SubmissionError(f"{self._name}: {what} ({self.location()}) {too_deep()}") from None
            # A number at the very end of the window may continue in the next chunk.
            if end == len(self._buf) and self._fill():
                continue
            if end - self._pos > MAX_RECORD_CHARS:
                raise self.too_large(what)
            self._pos = end
            return value


class PredictionStream:
    """Predictions of one submission file; ``metadata`` is complete once iteration has finished."""

    def __init__(self, stream: IO[str], name: str, kind: Literal["json", "jsonl"]) -> None:
        self.name = name
        self.kind = kind
        self.metadata: dict[str, Any] = {}
        self._stream = stream

    def __iter__(self) -> Iterator[Prediction]:
        if self.kind == "jsonl":
            return self._iter_jsonl()
        return self._iter_json()

    def _iter_jsonl(self) -> Iterator[Prediction]:
        seen_any = False
        number = 0
        # readline with a limit: a line is never read whole before it is known to be small enough.
        while line := self._stream.readline(MAX_RECORD_CHARS + 1):
            number += 1
            if len(line) > MAX_RECORD_CHARS:
                raise _too_large(f"{self.name}: line {number}", line)
            text = line.strip()
            if not text:
                continue
            seen_any = True
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                raise SubmissionError(
                    f"{self.name}: line {number} is not valid JSON: {error.msg} (column {error.colno})"
                ) from error
            except RecursionError:
                raise SubmissionError(f"{self.name}: line {number} {too_deep()}") from None
            yield to_prediction(record, f"{self.name} line {number}")
        if not seen_any:
            raise SubmissionError(f"{self.name} is empty: write one JSON prediction per line")

    def _iter_json(self) -> Iterator[Prediction]:
        window = _JsonWindow(self._stream, self.name)
        first = window.peek()
        if first == "":
            raise SubmissionError(
                f'{self.name} is empty: write {{"predictions": [{{"id": ..., "prediction_text": ...}}]}}'
            )
        if first == "[":
            yield from self._iter_array(window)
        else:
            yield from self._iter_object(window)
        if window.peek() != "":
            raise window.fail("unexpected text after the end of the JSON document")

    def _iter_object(self, window: _JsonWindow) -> Iterator[Prediction]:
        window.expect("{", 'a JSON object such as {"predictions": [...]}')
        found_predictions = False
        if window.peek() == "}":
            window.expect("}", "'}'")
        else:
            while True:
                key = window.value("a key")
                if not isinstance(key, str):
                    raise window.fail("expected a quoted key")
                window.expect(":", "':' after a key")
                if key == "predictions":
                    found_predictions = True
                    yield from self._iter_array(window)
                elif key == "metadata":
                    metadata = window.value('"metadata"')
                    if not isinstance(metadata, dict):
                        raise SubmissionError(f'{self.name}: "metadata" must be an object')
                    self.metadata = metadata
                else:
                    window.value(f'"{key}"')
                if window.expect(",}", "',' or '}'") == "}":
                    break
        if not found_predictions:
            raise SubmissionError(f'{self.name} has no "predictions" list')

    def _iter_array(self, window: _JsonWindow) -> Iterator[Prediction]:
        window.expect("[", 'a list after "predictions"')
        if window.peek() == "]":
            window.expect("]", "']'")
            return
        index = 0
        while True:
            record = window.value(f"predictions[{index}]")
            yield to_prediction(record, f"predictions[{index}]")
            index += 1
            if window.expect(",]", f"',' or ']' after predictions[{index - 1}]") == "]":
                return


def _pick_member(archive: zipfile.ZipFile, label: str) -> str:
    members = [
        info.filename for info in archive.infolist() if not info.is_dir() and not is_junk(info.filename)
    ]
    candidates = [
        name
        for name in members
        if PurePosixPath(name).name in PREDICTION_FILES and len(PurePosixPath(name).parts) <= 2
    ]
    if not candidates:
        held = ", ".join(sorted(members)[:10]) or "nothing"
        if len(members) > 10:
            held += f", ... ({len(members)} files)"
        raise SubmissionError(
            f"{label} holds no predictions.json or predictions.jsonl at its root (it holds: {held})"
        )
    if len(candidates) > 1:
        raise SubmissionError(
            f"{label} holds more than one predictions file ({', '.join(sorted(candidates))}): keep one"
        )
    return candidates[0]


def _check_member_size(info: zipfile.ZipInfo, label: str) -> None:
    if info.file_size > MAX_MEMBER_BYTES:
        raise SubmissionError(
            f"{info.filename} in {label} expands to {info.file_size / 1024**2:.0f} MiB, more than the limit "
            f"of {MAX_MEMBER_BYTES // 1024**2} MiB for a predictions file; "
            "submit fewer or shorter predictions"
        )


def _kind_of(name: str) -> Literal["json", "jsonl"]:
    return "jsonl" if name.lower().endswith(".jsonl") else "json"


@contextmanager
def open_predictions(path: Path) -> Iterator[PredictionStream]:
    """Open a submission (zip or bare file) as a :class:`PredictionStream`; raises SubmissionError."""
    if not path.is_file():
        raise SubmissionError(f"the submission {path.name} was not found")
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            member = _pick_member(archive, path.name)
            _check_member_size(archive.getinfo(member), path.name)
            with archive.open(member) as raw, _text(raw) as text:
                yield PredictionStream(text, PurePosixPath(member).name, _kind_of(member))
        return
    if path.suffix.lower() == ".zip":
        raise SubmissionError(
            f"{path.name} is not a valid zip archive: zip predictions.json or upload it bare"
        )
    if path.suffix.lower() not in (".json", ".jsonl"):
        raise SubmissionError(
            f"{path.name}: upload predictions.json, predictions.jsonl or a zip holding one of them"
        )
    with path.open("rb") as raw, _text(raw) as text:
        yield PredictionStream(text, path.name, _kind_of(path.name))


@contextmanager
def _text(raw: IO[bytes]) -> Iterator[IO[str]]:
    # utf-8-sig: editors on Windows prepend a byte-order mark that json would reject.
    wrapper = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="strict", newline="")
    try:
        yield wrapper
    except UnicodeDecodeError as error:
        raise SubmissionError(f"the predictions file is not UTF-8 text ({error.reason})") from error
    finally:
        wrapper.detach()
