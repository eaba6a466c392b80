"""The bodies of ``/preparations``."""

from __future__ import annotations

from typing import Any

from benchgen.bundle.spec import SelectionCriterion
from benchgen.lazy_model import LazyModel
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.training.examples import PreparedExample
from benchgen.vocabulary import Method


class PreparationSummary(LazyModel):
    """A preparation as its owner's list shows it; never its owner or its S3 keys."""

    preparation_id: str
    status: PreparationStatus
    environment_id: str
    environment_version: str
    method: Method
    benchmark: str
    base_model: str
    example_count: int | None
    gap_count: int | None
    failure_reason: str | None
    created_at: str
    finished_at: str | None

    @classmethod
    def of(cls, record: PreparationRecord) -> PreparationSummary:
        return cls.model_validate(record.model_dump(include=set(cls.model_fields)))


class PreparationDetail(PreparationSummary):
    """The preparation as its Overview shows it: the request, and what generating it found."""

    criteria: list[str]
    selection: SelectionCriterion
    run_ids: list[str]
    settings: dict[str, Any]
    splits: dict[str, int]
    kinds: dict[str, int]
    source_cases: int | None
    held_out_count: int | None
    dropped: dict[str, int]
    suggested_hyperparams: dict[str, float | int | str]
    state_hash: str | None

    @classmethod
    def of(cls, record: PreparationRecord) -> PreparationDetail:
        return cls.model_validate(record.model_dump(include=set(cls.model_fields)))


class PreparationList(LazyModel):
    items: list[PreparationSummary]
    next_token: str | None = None


class ExamplePage(LazyModel):
    items: list[PreparedExample]
    next_token: str | None = None
