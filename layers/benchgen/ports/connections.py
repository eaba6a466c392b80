"""The provider connections table, as the training steps read it."""

from __future__ import annotations

from typing import Protocol

from benchgen.records.connections import ConnectionRecord


class ConnectionsReader(Protocol):
    def get(self, connection_id: str) -> ConnectionRecord | None: ...
