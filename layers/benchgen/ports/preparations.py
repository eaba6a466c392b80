"""The preparations table, as the preparation pipeline's Check records a preparation's end."""

from __future__ import annotations

from typing import Protocol

from benchgen.training.preparation import GenerationReport


class PreparationsStore(Protocol):
    """A preparation's moves out of Generating, each conditional: ``False``, nothing changed, when it left."""

    def ready(
        self, preparation_id: str, *, report: GenerationReport, gap_count: int, finished_at: str
    ) -> bool: ...

    def fail(self, preparation_id: str, *, reason: str, finished_at: str) -> bool: ...
