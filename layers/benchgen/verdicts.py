"""Per-case judgments: what scoring leaves behind for reports and for the finetune artifact.

:class:`Verdict` reads and checks a verdict line; the templates make :class:`VerdictRecord` s, which the
per-case loop encodes with msgspec into the same bytes at a fraction of the cost.
"""

from __future__ import annotations

import msgspec
from pydantic import BaseModel, ConfigDict, Field

# Where scoring_output.zip holds the verdicts, one a line.
VERDICTS_NAME = "verdicts.jsonl"


class CriterionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    passed: bool | None  # None: the scoring did not judge this criterion on its own


class Verdict(BaseModel):
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


class CriterionMark(msgspec.Struct, frozen=True):
    id: str
    passed: bool | None


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


AnyVerdict = Verdict | VerdictRecord

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
