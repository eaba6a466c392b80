"""The environments table: environment versions, each recorded once, and the owner of each environment."""

from __future__ import annotations

from typing import Protocol

from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord


class EnvironmentsReader(Protocol):
    def get(self, environment_id: str, version: str) -> EnvironmentRecord | None: ...


class EnvironmentsStore(EnvironmentsReader, Protocol):
    def put_if_absent(self, record: EnvironmentRecord) -> bool:
        """Store a version; ``False`` (and nothing changed) when that version is already recorded."""
        ...

    def claim_owner(self, owner: EnvironmentOwner) -> EnvironmentOwner:
        """Make ``owner`` the environment's owner unless it has one; the owner that stands."""
        ...
