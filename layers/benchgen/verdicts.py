"""Per-case judgments: what scoring leaves behind for reports and for the finetune artifact.

:class:`Verdict` reads and checks a verdict line; the templates make :class:`VerdictRecord` s, which the
per-case loop encodes with msgspec into the same bytes at a fraction of the cost, and reads back with
:func:`decode_verdict`. :func:`verdict_lines` opens the verdicts of a scoring output and
:func:`read_verdicts` reads them, for every reader alike: the artifact, a preparation, a comparison.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import msgspec
from pydantic import ConfigDict, Field

from benchgen.errors import ScoringError
from benchgen.lazy_model import LazyModel

# Where scoring_output.zip holds the verdicts, one a line.
VERDICTS_NAME = "verdicts.jsonl"
_READ_BUFFER = 1 << 20

Read = TypeVar("Read")


class CriterionResult(LazyModel):
    model_config = ConfigDict(frozen=True)

    id: str
    passed: bool | None  # None: the scoring did not judge this criterion on its own
    # A graded criterion's score on its own scale and the grader's reason (a judged template's rubric);
    # left out of the line when not given, so the other templates' lines stay as they were.
    score: int | None = Field(default=None, exclude_if=lambda value: value is None)
    reason: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # ... and that scale, lowest and highest score, so a reader knows what the score is out of.
    scale: tuple[int, int] | None = Field(default=None, exclude_if=lambda value: value is None)


class Verdict(LazyModel):
    """One case, judged. Written one per line to ``verdicts.jsonl`` inside ``scoring_output.zip``."""

    case_id: str
    question: str = ""
    gold: str
    prediction: str | None  # None: the model gave no (extractable) answer
    raw_prediction: str = ""
    passed: bool
    # Whether the grader could read an answer at all (math: a final answer was extracted). The built-in
    # templates always say; a scoring program's verdict that leaves it out means not known (None).
    answered: bool | None = None
    near_miss: bool = False
    score: float = 0.0  # per-case credit in [0, 1] (F1 for qa, 1/0 elsewhere)
    criteria: list[CriterionResult] = Field(default_factory=list)
    difficulty: str | None = None
    domain: str | None = None
    route: str | None = None
    solution: str | None = None
    detail: str = ""
    # A reasoning model's reasoning, kept apart from the answer it judged (``raw_prediction`` keeps the
    # whole text); left out of the line when the prediction had none, so such lines stay as they were.
    reasoning: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # Why the case could not be judged (a judge's answer that could not be read, or no answer): the case
    # is neither passed nor failed, and no selection takes it. Left out of the line when it was judged.
    unjudged: str | None = Field(default=None, exclude_if=lambda value: value is None)


class CriterionMark(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    passed: bool | None
    score: int | None = None  # a graded criterion's score on its scale (None: not graded, no key)
    reason: str | None = None  # ... and why, as the grader said
    scale: tuple[int, int] | None = None  # ... and its scale: the lowest and the highest score


class VerdictRecord(msgspec.Struct, kw_only=True):
    """A :class:`Verdict` as the templates make it: a plain record, encoded by :func:`encode_verdict`
    into the line that :class:`Verdict` writes (the same fields, in the same order, the same JSON)."""

    case_id: str
    question: str = ""
    gold: str
    prediction: str | None
    raw_prediction: str = ""
    passed: bool
    answered: bool
    near_miss: bool = False
    score: float = 0.0
    criteria: tuple[CriterionMark, ...] = ()
    difficulty: str | None = None
    domain: str | None = None
    route: str | None = None
    solution: str | None = None
    detail: str = ""
    reasoning: str | msgspec.UnsetType = msgspec.UNSET  # UNSET: no reasoning, and no key in the line
    unjudged: str | msgspec.UnsetType = msgspec.UNSET  # why it could not be judged; UNSET: it was judged


AnyVerdict = Verdict | VerdictRecord


def is_unjudged(verdict: AnyVerdict) -> bool:
    """Whether the case could not be judged: neither a pass nor a fail, and never a mistake to train on."""
    return isinstance(verdict.unjudged, str)


# msgspec writes floats from 1e16 up as 1e16 where pydantic writes 1e+16: such a score (never one of the
# built-in templates') is written by the model, so every line stays what Verdict writes.
_EXPONENT_FROM = 1e16


def append_verdict(record: VerdictRecord, encoder: msgspec.json.Encoder, buffer: bytearray) -> None:
    """Append the verdict's line to ``buffer``: byte for byte what ``Verdict.model_dump_json`` gives, and
    a newline."""
    if abs(record.score) >= _EXPONENT_FROM:
        model = Verdict.model_validate(msgspec.to_builtins(record))
        buffer += model.model_dump_json().encode("utf-8")
    else:
        encoder.encode_into(record, buffer, -1)
    buffer += b"\n"


_RECORD = msgspec.json.Decoder(VerdictRecord)


def decode_verdict(line: bytes) -> VerdictRecord:
    """The verdict of a line as a record; a ValueError (pydantic's) when it is not one."""
    try:
        return _RECORD.decode(line)
    except msgspec.DecodeError:
        # The model's lax coercions (1 for true, "0.5" for a float) and its error messages stay the rule.
        verdict = Verdict.model_validate_json(line)
        return msgspec.convert(verdict.model_dump(), VerdictRecord)


@contextmanager
def verdict_lines(scoring_output: Path) -> Iterator[Iterator[bytes] | None]:
    """The lines of ``verdicts.jsonl`` in the scoring output zip (at its root, or else the shallowest);
    None when it holds none."""
    try:
        archive = zipfile.ZipFile(scoring_output)
    except zipfile.BadZipFile as exc:
        raise ScoringError(f"{scoring_output.name} is not a zip archive holding {VERDICTS_NAME}") from exc
    with archive:
        names = [n for n in archive.namelist() if n == VERDICTS_NAME or n.endswith("/" + VERDICTS_NAME)]
        if not names:
            yield None
            return
        with archive.open(min(names, key=lambda n: (n.count("/"), n))) as stream:
            # Lines split by the C reader: the member's own readline is Python, a call per line.
            yield iter(io.BufferedReader(stream, _READ_BUFFER))  # type: ignore[type-var]


def read_verdicts(
    lines: Iterable[bytes], decode: Callable[[bytes], Read], *, where: str = VERDICTS_NAME
) -> Iterator[tuple[Read, bytes]]:
    """Each verdict among ``lines`` as ``decode`` reads it (``Verdict.model_validate_json`` or
    :func:`decode_verdict`), with its line; blank lines are passed over. A line that ``decode`` refuses
    raises a ScoringError naming it as line so-and-so of ``where``."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            verdict = decode(line)
        except ValueError as exc:
            raise ScoringError(f"{where} line {number} is not a verdict: {exc}") from exc
        yield verdict, line
