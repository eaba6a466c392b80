"""The environments table: environment versions, each recorded once, and the owner of each environment."""

from __future__ import annotations

import builtins
from typing import Protocol

from benchgen.ports.pages import Page
from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord
from benchgen.records.judge_calibration import JudgeCalibration


class EnvironmentsReader(Protocol):
    def get(self, environment_id: str, version: str) -> EnvironmentRecord | None: ...


class CalibratedEnvironments(EnvironmentsReader, Protocol):
    """The versions, as a calibration that ends records its judge's figures on them."""

    def record_calibration(self, environment_id: str, version: str, calibration: JudgeCalibration) -> bool:
        """Replace the version's running calibration with ``calibration``; ``False`` (nothing changed)
        when its calibration is not running (another delivery finished it first)."""
        ...


class OwnedEnvironments(EnvironmentsReader, Protocol):
    """The versions, and who owns each environment: what a step that acts for the owner reads."""

    def owner_of(self, environment_id: str) -> EnvironmentOwner | None: ...


class EnvironmentsStore(EnvironmentsReader, Protocol):
    def put_if_absent(self, record: EnvironmentRecord) -> bool:
        """Store a version; ``False`` (and nothing changed) when that version is already recorded."""
        ...

    def claim_owner(self, owner: EnvironmentOwner) -> EnvironmentOwner:
        """Make ``owner`` the environment's owner unless it has one; the owner that stands."""
        ...


class EnvironmentsCatalog(EnvironmentsStore, Protocol):
    """The versions as the API lists them, and who publishes each environment."""

    def owner_of(self, environment_id: str) -> EnvironmentOwner | None: ...

    def set_publisher_group(self, environment_id: str, group: str, *, owner: str) -> bool:
        """Name the group whose members publish too; ``False`` (nothing changed) unless ``owner`` owns it."""
        ...

    def versions(self, environment_id: str) -> builtins.list[EnvironmentRecord]:
        """Every recorded version of one environment, oldest registration first."""
        ...

    def list(self, *, limit: int = ..., next_token: str | None = None) -> Page[EnvironmentRecord]:
        """All environment versions, a page at a time (a page may hold fewer than ``limit``)."""
        ...
