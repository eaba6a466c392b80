"""The plain records the artifact's per-case loop carries: msgspec Structs instead of pydantic models.

A case line is decoded straight into a Struct (one C call, no validation layer per field); whatever the
Struct refuses goes through ``json``, so a line is accepted, coerced or refused exactly as json reads it.
Verdict lines are read the same way, by ``benchgen.verdicts.decode_verdict``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from benchgen.errors import BundleError
from benchgen.finetune.seed import CaseText, Source


class CaseRecord(msgspec.Struct):
    """The fields of a ``cases.jsonl`` object the artifact reads, each of any JSON type."""

    id: Any = None
    question: Any = None
    answer: Any = None
    solution: Any = None

    def text(self) -> CaseText:
        """Its question and answer as text (absent: empty), and its worked solution when it is text."""
        solution = self.solution
        return CaseText(
            str(self.question or ""), str(self.answer or ""), solution if isinstance(solution, str) else None
        )


class CaseId(msgspec.Struct):
    """Only the id of a ``cases.jsonl`` object: the rest of the line is checked, but nothing is kept."""

    id: Any = None


class SummaryRecord(msgspec.Struct, frozen=True):
    """What the judge said about the source case (``seed.VerdictSummary``)."""

    passed: bool
    answered: bool | None  # None: the scoring did not say
    prediction: str | None


class ExampleRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One training example (``seed.Example``), as the formats render it."""

    example_id: str
    case_id: str
    run_id: str
    source: Source
    variant: int = 0
    input: str
    target: str
    system: str = ""
    rejected: str | None = None
    verdict: SummaryRecord | None = None
    criteria: list[str] = []


_CASE = msgspec.json.Decoder(CaseRecord)
_CASE_ID = msgspec.json.Decoder(CaseId)


def decode_case(line: bytes) -> CaseRecord | None:
    """The case of a line, or None when the line is valid JSON but not an object; a ValueError when it
    is not JSON."""
    try:
        return _CASE.decode(line)
    except msgspec.DecodeError:
        # What json reads and msgspec does not (NaN, integers beyond 64 bits, a non-object) is read as before.
        record = json.loads(line)
        return msgspec.convert(record, CaseRecord) if isinstance(record, dict) else None


def read_case_lines(path: Path) -> Iterator[tuple[str, bytes]]:
    """Each case line of a ``cases.jsonl`` with a string id, with that id, in file order; a BundleError on
    a line that is not JSON. Lines that are not objects, or have no string id, are passed over. Only the
    id is read: ``decode_case`` reads the rest of the lines wanted."""
    with path.open("rb") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                case_id = _CASE_ID.decode(line).id
            except msgspec.DecodeError:
                try:
                    record = decode_case(line)
                except ValueError as exc:
                    raise BundleError(
                        path.name, f"line {number} is not valid JSON; write one case object a line"
                    ) from exc
                case_id = None if record is None else record.id
            if isinstance(case_id, str):
                yield case_id, line


def read_cases(path: Path) -> Iterator[tuple[str, CaseRecord]]:
    """Each case of a ``cases.jsonl`` with a string id, in file order (see ``read_case_lines``)."""
    for case_id, line in read_case_lines(path):
        record = decode_case(line)
        assert record is not None  # the line was read as an object with this id
        yield case_id, record
