"""Stream reference cases and match them with predictions through an on-disk index.

Both sides can hold a million records, so neither is ever held in memory: cases are read line by line and
predictions go into a SQLite file in the caller's work directory (a prediction output that ingest wrote
needs no index: see :mod:`benchgen.scoring.ingested`).

A case line that decodes straight into a :class:`Case` record is one the pydantic model accepts with the
same values; any other line goes through the model, which says what is wrong with it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec
from pydantic import ValidationError

from benchgen.cases import Case, Prediction, prediction_json, validate_case
from benchgen.errors import BundleError, too_deep
from benchgen.submission import describe_validation_error

_BATCH = 1000
_BOM = b"\xef\xbb\xbf"

Pairs = Iterator[tuple[Case, Prediction | None]]


def _case_of(line: bytes, number: int, label: str, kind: type[Case]) -> Case | None:
    """The case on ``line`` through the pydantic model (None for a blank line); BundleError says why not."""
    try:
        text = line.decode("utf-8-sig" if number == 1 else "utf-8").strip()
    except UnicodeDecodeError:
        raise BundleError(label, f"line {number} is not UTF-8 text; save the file as UTF-8") from None
    if not text:
        return None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise BundleError(label, f"line {number} is not valid JSON: {error.msg}") from error
    except RecursionError:
        raise BundleError(label, f"line {number} {too_deep()}") from None
    if isinstance(record, dict) and isinstance(record.get("id"), int):
        record["id"] = str(record["id"])
    try:
        return validate_case(record, kind)
    except ValidationError as error:
        raise BundleError(label, describe_validation_error(f"line {number}", error)) from error


def iter_cases(path: Path, kind: type[Case] = Case) -> Iterator[Case]:
    """Cases of ``cases.jsonl`` in file order, each a ``kind`` (the template's case record); a bad line
    raises BundleError naming its line number."""
    label = f"reference/{path.name}"
    decode = msgspec.json.Decoder(kind).decode
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield decode(line.removeprefix(_BOM) if number == 1 else line)
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
                case = _case_of(line, number, label, kind)
                if case is not None:
                    yield case


class PredictionIndex:
    """Predictions keyed by id on disk; the first occurrence of an id wins."""

    def __init__(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute("CREATE TABLE predictions (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, record TEXT)")
        self._db.execute("CREATE TABLE cases (pos INTEGER PRIMARY KEY, id TEXT NOT NULL)")
        self.count = 0

    def add_predictions(self, predictions: Iterable[Prediction]) -> int:
        """Store every prediction in arrival order; returns how many were read."""
        batch: list[tuple[int, str, str]] = []
        for prediction in predictions:
            batch.append((self.count, prediction.id, prediction_json(prediction)))
            self.count += 1
            if len(batch) >= _BATCH:
                self._db.executemany("INSERT INTO predictions VALUES (?, ?, ?)", batch)
                batch.clear()
        self._db.executemany("INSERT INTO predictions VALUES (?, ?, ?)", batch)
        self._db.execute("CREATE INDEX IF NOT EXISTS predictions_by_id ON predictions (id, seq)")
        self._db.commit()
        return self.count

    def add_case_ids(self, ids: Iterable[str]) -> int:
        """Record the reference case ids (in case order) so unknown and missing ids can be counted."""
        batch: list[tuple[int, str]] = []
        total = 0
        for case_id in ids:
            batch.append((total, case_id))
            total += 1
            if len(batch) >= _BATCH:
                self._db.executemany("INSERT INTO cases VALUES (?, ?)", batch)
                batch.clear()
        self._db.executemany("INSERT INTO cases VALUES (?, ?)", batch)
        self._db.execute("CREATE INDEX IF NOT EXISTS cases_by_id ON cases (id)")
        self._db.commit()
        return total

    def get(self, case_id: str) -> Prediction | None:
        row = self._db.execute(
            "SELECT record FROM predictions WHERE id = ? ORDER BY seq LIMIT 1", (case_id,)
        ).fetchone()
        return None if row is None else msgspec.json.decode(row[0], type=Prediction)

    def duplicates(self, limit: int) -> tuple[int, list[str]]:
        """How many extra records repeat an id already seen, and the first repeated ids."""
        (extra,) = self._db.execute("SELECT COUNT(*) - COUNT(DISTINCT id) FROM predictions").fetchone()
        rows = self._db.execute(
            "SELECT id FROM predictions GROUP BY id HAVING COUNT(*) > 1 ORDER BY MIN(seq) LIMIT ?", (limit,)
        ).fetchall()
        return int(extra), [row[0] for row in rows]

    def unknown(self, limit: int) -> tuple[int, list[str]]:
        """Distinct prediction ids that name no case, and the first of them."""
        query = "FROM predictions p WHERE NOT EXISTS (SELECT 1 FROM cases c WHERE c.id = p.id) GROUP BY p.id"
        (count,) = self._db.execute(f"SELECT COUNT(*) FROM (SELECT p.id {query})").fetchone()  # noqa: S608
        rows = self._db.execute(f"SELECT p.id {query} ORDER BY MIN(p.seq) LIMIT ?", (limit,)).fetchall()
        return int(count), [row[0] for row in rows]

    def in_case_order(self) -> Iterator[tuple[str, str | None]]:
        """(case id, stored prediction JSON or None) for every case, in case order."""
        cursor = self._db.execute(
            "SELECT c.id, (SELECT p.record FROM predictions p WHERE p.id = c.id ORDER BY p.seq LIMIT 1) "
            "FROM cases c ORDER BY c.pos"
        )
        yield from cursor

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> PredictionIndex:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
