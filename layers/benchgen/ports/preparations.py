"""The preparations table, as the preparation pipeline's Check records a preparation's end and the API
creates and lists preparations."""

from __future__ import annotations

from typing import Protocol

from benchgen.ports.pages import Page
from benchgen.records.preparations import PreparationRecord
from benchgen.training.preparation import GenerationReport


class PreparationsStore(Protocol):
    """A preparation's moves out of Generating, each conditional: ``False``, nothing changed, when it left."""

    def ready(
        self, preparation_id: str, *, report: GenerationReport, gap_count: int, finished_at: str
    ) -> bool: ...

    def fail(self, preparation_id: str, *, reason: str, finished_at: str) -> bool: ...


class PreparationsCatalog(PreparationsStore, Protocol):
    """Preparations as the API records, reads and lists them."""

    def create(self, record: PreparationRecord) -> bool:
        """Store a new preparation; ``False`` (and nothing changed) when the id is taken."""
        ...

    def get(self, preparation_id: str) -> PreparationRecord | None: ...

    def list(self, *, owner: str, limit: int = ..., next_token: str | None = None) -> Page[PreparationRecord]:
        """The owner's preparations, newest first."""
        ...
