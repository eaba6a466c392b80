"""The event bus the domain events go to."""

from __future__ import annotations

from typing import Any, Protocol


class Publisher(Protocol):
    def publish(self, detail_type: str, detail: dict[str, Any]) -> None: ...
