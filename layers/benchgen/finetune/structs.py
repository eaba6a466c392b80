"""The plain records the artifact's per-case loop carries: msgspec Structs instead of pydantic models.

The loop reads its verdicts and cases as records too, through ``benchgen.verdicts.decode_verdict`` and
``benchgen.cases.read_case_lines``.
"""

from __future__ import annotations

import msgspec

from benchgen.finetune.seed import Source


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
