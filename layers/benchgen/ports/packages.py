"""The packages table, as the training steps read it and the package pipeline's build records it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from benchgen.records.packages import PackageFile, PackageRecord, PackageStatus


class PackagesReader(Protocol):
    def get(self, package_id: str) -> PackageRecord | None: ...


class PackagesStore(Protocol):
    """A package's moves out of Building, each conditional: ``False``, nothing changed, when it has left."""

    def transition(
        self, package_id: str, *, expected: PackageStatus, status: PackageStatus, reason: str | None = None
    ) -> bool: ...

    def ready(self, package_id: str, *, sha256: str, size: int, files: Mapping[str, PackageFile]) -> bool: ...
