"""The packages table, as the training steps read it, the package pipeline's build records it and the API
requests packages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from benchgen.ports.pages import Page
from benchgen.records.packages import PackageFile, PackageRecord, PackageStatus


class PackagesReader(Protocol):
    def get(self, package_id: str) -> PackageRecord | None: ...


class PackagesStore(Protocol):
    """A package's moves out of Building, each conditional: ``False``, nothing changed, when it has left."""

    def transition(
        self, package_id: str, *, expected: PackageStatus, status: PackageStatus, reason: str | None = None
    ) -> bool: ...

    def ready(self, package_id: str, *, sha256: str, size: int, files: Mapping[str, PackageFile]) -> bool: ...


class PackagesCatalog(PackagesReader, PackagesStore, Protocol):
    """Packages as the API requests and lists them."""

    def put_if_absent(self, record: PackageRecord) -> bool:
        """Store a new package; ``False`` (and nothing changed) when the package id is taken."""
        ...

    def retry(self, package_id: str, *, attempt: int) -> bool:
        """Failed at ``attempt`` -> Building at the next attempt, its reason cleared; ``False`` if not so."""
        ...

    def list(
        self, preparation_id: str, *, limit: int = ..., next_token: str | None = None
    ) -> Page[PackageRecord]:
        """The packages of one preparation, newest first."""
        ...
