"""The prepared example: one row of training material with everything a trainer needs to judge it.

A preparation writes its examples to ``examples.jsonl``, one :class:`PreparedExample` a line, in a fixed
order (split, then example id), and its held-out cases to ``held_out.jsonl``, one :class:`HeldOutCase` a
line, by case id. Both files are plain JSON lines, so the examples view pages through them and a package
reads them without the build that wrote them.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field

from benchgen.finetune.seed import Source, VerdictSummary
from benchgen.finetune.split import Split
from benchgen.lazy_model import LazyModel

EXAMPLES_NAME = "examples.jsonl"
HELD_OUT_NAME = "held_out.jsonl"


class Kind(StrEnum):
    """Where an example's text comes from: a judged case, a variant of one, or the bundle's pool."""

    SEED = "seed"
    AUGMENTED = "augmented"
    POOL = "pool"


class SourceContext(LazyModel):
    """The judged case an example was made from (for a pool row: the row id, no verdict)."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    run_id: str | None  # None for pool rows: no run judged them
    layer: Source  # seed, passed or near_miss for judged cases; augmented; pool
    response: str | None = None  # the model's own output for the case, as the run recorded it
    verdict: VerdictSummary | None = None


class PreparedExample(LazyModel):
    """One row of a preparation."""

    model_config = ConfigDict(frozen=True)

    example_id: str
    split: Split
    kind: Kind
    variant: int = 0
    criteria: list[str] = Field(default_factory=list)  # the governing criteria (ids of `criteria:`)
    breakdown: dict[str, str] = Field(default_factory=dict)  # the case's difficulty, domain, route...
    system: str = ""
    prompt: str
    chosen: str  # the target: short reasoning plus the benchmark's correct answer
    rejected: str | None = None  # preference only: the model's own wrong answer
    # Reinforcement only: what the environment's scoring needs to judge an answer to the source case (its
    # gold answer, criteria and scoring context), shared by every variant of the case. Left out of the JSON
    # when absent, so the rows of the other methods keep their bytes.
    grading: dict[str, Any] | None = Field(default=None, exclude_if=lambda value: value is None)
    source: SourceContext
    source_text_hash: str  # text_hash of the source case's question (shared by every variant)


class HeldOutCase(LazyModel):
    """A case of the environment version whose id hash falls in the test bucket: never trained on."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    text_hash: str


def normalize_text(text: str) -> str:
    """The form texts are compared in: case-folded, whitespace runs collapsed, ends trimmed."""
    return " ".join(text.casefold().split())


def text_hash(text: str) -> str:
    """sha256 of the normalized text: equal for texts that differ only in case and spacing."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()
