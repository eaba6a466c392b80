"""Stream reference cases and match them with their predictions.

Both sides can hold a million records, so neither is ever held in memory. Ingest writes the prediction
output in case order, one record a line: :func:`read_ingested` reads that layout line by line and
:func:`merge_join` walks it beside the cases. Any other prediction output goes through an on-disk index
(:class:`PredictionIndex`), a SQLite file in the caller's work directory.

Records were validated when they came in (a bundle's cases, a submission's predictions); a line that
decodes straight into a record is taken as is, and any other goes through the pydantic model that says
what is wrong with it.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import msgspec
from pydantic import ValidationError

from benchgen.cases import Case, CaseModel, Prediction, case_record, prediction_json
from benchgen.errors import BundleError, too_deep
from benchgen.submission import MAX_MEMBER_BYTES, MAX_RECORD_CHARS, describe_validation_error

_BATCH = 1000
_BOM = b"\xef\xbb\xbf"
_UNREADABLE = (msgspec.DecodeError, UnicodeDecodeError)
# predictions.json as ingest writes it (see benchgen.ingest): these lines around one record a line.
INGESTED_MEMBER = "predictions.json"
_HEAD = b'{"predictions": [\n'
_END = b"],\n"
_METADATA = b'"metadata": '

Pairs = Iterator[tuple[Case, Prediction | None]]


def _case_of(line: bytes, number: int, label: str) -> Case | None:
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
        return case_record(CaseModel.model_validate(record))
    except ValidationError as error:
        raise BundleError(label, describe_validation_error(f"line {number}", error)) from error


def iter_cases(path: Path) -> Iterator[Case]:
    """Cases of ``cases.jsonl`` in file order; a bad line raises BundleError naming its line number."""
    label = f"reference/{path.name}"
    decode = msgspec.json.Decoder(Case).decode
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield decode(line.removeprefix(_BOM) if number == 1 else line)
            except (*_UNREADABLE, msgspec.ValidationError):
                case = _case_of(line, number, label)
                if case is not None:
                    yield case


class NotIngested(Exception):
    """The prediction output is not in ingest's layout, or not in case order: read it through the index."""


class IngestedPredictions:
    """The records of a ``predictions.json`` in ingest's layout; ``metadata`` is set once they are read.

    Raises NotIngested, as soon as it sees it, at anything else: the caller starts again the general way.
    """

    def __init__(self, lines: IO[bytes]) -> None:
        self.metadata: dict[str, Any] = {}
        self._lines = lines

    def __iter__(self) -> Iterator[Prediction]:
        decode = msgspec.json.Decoder(Prediction).decode
        readline = self._lines.readline
        if readline(len(_HEAD)) != _HEAD:
            raise NotIngested
        line = readline(MAX_RECORD_CHARS)
        more = line != _END
        while more:
            if line.endswith(b",\n"):
                record = line[:-2]
            elif line.endswith(b"\n"):
                record, more = line[:-1], False
            else:
                raise NotIngested
            try:
                yield decode(record)
            except (*_UNREADABLE, msgspec.ValidationError):
                raise NotIngested from None
            line = readline(MAX_RECORD_CHARS)
            if not more and line != _END:
                raise NotIngested
        self.metadata = self._metadata(readline(MAX_RECORD_CHARS))

    def _metadata(self, line: bytes) -> dict[str, Any]:
        if not (line.startswith(_METADATA) and line.endswith(b"}\n")) or self._lines.read(1):
            raise NotIngested
        try:
            metadata = json.loads(line[len(_METADATA) : -2])
        except (ValueError, RecursionError):
            raise NotIngested from None
        if not isinstance(metadata, dict):
            raise NotIngested
        return metadata


@contextmanager
def read_ingested(prediction_output: Path) -> Iterator[IngestedPredictions]:
    """Open a prediction output written by ingest; raises NotIngested when it is something else."""
    if not zipfile.is_zipfile(prediction_output):
        raise NotIngested
    with zipfile.ZipFile(prediction_output) as archive:
        infos = archive.infolist()
        if [info.filename for info in infos] != [INGESTED_MEMBER] or infos[0].file_size > MAX_MEMBER_BYTES:
            raise NotIngested
        with archive.open(infos[0]) as lines:
            yield IngestedPredictions(lines)


def merge_join(
    cases: Iterator[Case], predictions: Iterator[Prediction]
) -> Iterator[tuple[Case, Prediction | None]]:
    """Each case with its prediction, walking both in step: ingest writes the predictions in case order,
    skipping the cases without one. A record left over means another order, and raises NotIngested."""
    pending = next(predictions, None)
    for case in cases:
        if pending is not None and pending.id == case.id:
            yield case, pending
            pending = next(predictions, None)
        else:
            yield case, None
    if pending is not None:
        raise NotIngested


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
