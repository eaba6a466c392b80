"""Preparations: training material prepared from judged runs, as requested and as generated."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from benchgen.bundle.spec import SelectionCriterion
from benchgen.lazy_model import LazyModel
from benchgen.records.bounds import MAX_ITEMS, Key, Text, first_entries, first_items
from benchgen.records.timestamps import utc_now
from benchgen.vocabulary import Method


class PreparationStatus(StrEnum):
    GENERATING = "Generating"
    READY = "Ready"
    FAILED = "Failed"


Counts = Annotated[dict[Key, int], AfterValidator(first_entries(MAX_ITEMS))]
Hyperparams = Annotated[dict[Key, float | int | str], AfterValidator(first_entries(MAX_ITEMS))]
Reasons = Annotated[dict[Text, int], AfterValidator(first_entries(MAX_ITEMS))]


class PreparationRecord(LazyModel):
    """Training material prepared from judged runs: its request, then what generating it found.

    The request fields (environment version, method, scope, selection, runs, settings) are written when it
    is created; the counts, state hash and gap count when the preparation state machine records it Ready.
    """

    preparation_id: str
    owner: str
    status: PreparationStatus = PreparationStatus.GENERATING
    environment_id: str
    environment_version: str
    method: Method
    criteria: Annotated[list[Key], AfterValidator(first_items)] = Field(default_factory=list)
    selection: SelectionCriterion
    run_ids: list[str]
    settings: dict[str, Any] = Field(default_factory=dict)
    benchmark: Text = ""
    base_model: str
    example_count: int | None = None
    splits: Counts = Field(default_factory=dict)  # train / validation / test -> rows
    kinds: Counts = Field(default_factory=dict)  # seed / augmented / pool -> rows
    source_cases: int | None = None
    held_out_count: int | None = None
    # Why candidate rows were left out (one sentence each) -> how many; the first MAX_ITEMS reasons.
    dropped: Reasons = Field(default_factory=dict)
    suggested_hyperparams: Hyperparams = Field(default_factory=dict)
    state_hash: str | None = None
    gap_count: int | None = None
    failure_reason: Text | None = None
    examples_key: str
    held_out_key: str
    coverage_key: str
    created_at: str = Field(default_factory=utc_now)
    finished_at: str | None = None
