"""State machine executions, started by name."""

from __future__ import annotations

from typing import Any, Protocol


class Starter(Protocol):
    """One state machine's executions, started at most once per name."""

    def start_once(self, name: str, payload: dict[str, Any]) -> bool:
        """Start the named execution; ``False`` when it already exists (a duplicate event)."""
        ...
