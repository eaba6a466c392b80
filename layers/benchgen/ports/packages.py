"""The packages table, as the training steps read it."""

from __future__ import annotations

from typing import Protocol

from benchgen.records import PackageRecord


class PackagesReader(Protocol):
    def get(self, package_id: str) -> PackageRecord | None: ...
