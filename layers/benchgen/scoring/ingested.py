"""The prediction output's ``predictions.json`` as ingest writes it, and read back without an index.

Ingest writes the records in case order, one a line, the cases without a prediction skipped::

    {"predictions": [
    {"id":"q1","prediction_text":"..."},
    {"id":"q3","prediction_text":"..."}
    ],
    "metadata": {...}}

Scoring reads that layout line by line (:func:`read_ingested`) and walks it beside the cases
(:func:`merge_join`); anything else raises NotIngested, and the caller reads it the general way.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import msgspec

from benchgen.cases import Case, Prediction
from benchgen.submission import MAX_MEMBER_BYTES, MAX_RECORD_CHARS

MEMBER = "predictions.json"
_OPEN = b'{"predictions": ['
_END = b"],"
_METADATA = b'"metadata": '
_FLUSH = 1 << 18
_CHUNK = 1 << 16


def write_predictions_json(
    target: IO[bytes],
    records: Iterator[tuple[str, str | None]],
    metadata_for: Callable[[int, int], dict[str, Any]],
    *,
    first_ids: int,
) -> tuple[int, int, list[str], dict[str, Any]]:
    """Stream ``(case id, record JSON or None)`` in case order into ``target``; returns the number of
    cases, of records, the first ``first_ids`` ids without one and ``metadata_for(cases, records)``."""
    total = answered = 0
    missing_ids: list[str] = []
    pending = [_OPEN]
    size = 0
    for case_id, record in records:
        total += 1
        if record is None:
            if len(missing_ids) < first_ids:
                missing_ids.append(case_id)
            continue
        line = (b",\n" if answered else b"\n") + record.encode("utf-8")
        pending.append(line)
        size += len(line)
        answered += 1
        # Deflate is fed in large pieces: a write per record costs more than the record.
        if size >= _FLUSH:
            target.write(b"".join(pending))
            pending.clear()
            size = 0
    metadata = metadata_for(total, answered)
    pending.append(
        b"\n" + _END + b"\n" + _METADATA + json.dumps(metadata, sort_keys=True).encode("utf-8") + b"}\n"
    )
    target.write(b"".join(pending))
    return total, answered, missing_ids, metadata


class NotIngested(Exception):
    """The prediction output is not in ingest's layout, or not in case order: read it through the index."""


class IngestedPredictions:
    """The records of a ``predictions.json`` in ingest's layout; ``metadata`` is set once they are read.

    Raises NotIngested, as soon as it sees it, at anything else: the caller starts again the general way.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self.metadata: dict[str, Any] = {}
        self._stream = stream

    def _lines(self) -> Iterator[bytes]:
        """The lines of the stream, without their newline; the last is what follows the last newline."""
        rest = b""
        while chunk := self._stream.read(_CHUNK):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            if len(rest) > MAX_RECORD_CHARS:
                raise NotIngested
            yield from lines
        yield rest

    def __iter__(self) -> Iterator[Prediction]:
        decode = msgspec.json.Decoder(Prediction).decode
        lines = self._lines()
        if next(lines) != _OPEN:
            raise NotIngested
        line = next(lines, b"")
        more = line != _END
        while more:
            if line.endswith(b","):
                record = line[:-1]
            else:
                record, more = line, False
            try:
                yield decode(record)
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
                raise NotIngested from None
            line = next(lines, b"")
            if not more and line != _END:
                raise NotIngested
        self.metadata = self._metadata(next(lines, b""))
        if next(lines, None) != b"" or next(lines, None) is not None:
            raise NotIngested

    def _metadata(self, line: bytes) -> dict[str, Any]:
        if not (line.startswith(_METADATA) and line.endswith(b"}")):
            raise NotIngested
        try:
            metadata = json.loads(line[len(_METADATA) : -1])
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
        if [info.filename for info in infos] != [MEMBER] or infos[0].file_size > MAX_MEMBER_BYTES:
            raise NotIngested
        with archive.open(infos[0]) as stream:
            yield IngestedPredictions(stream)


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
