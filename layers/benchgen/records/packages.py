"""Packages: one export profile over one preparation state, built into a zip."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, Field

from benchgen.lazy_model import LazyModel
from benchgen.records.bounds import MAX_ITEMS, Key, Text, first_entries
from benchgen.records.timestamps import utc_now


class PackageStatus(StrEnum):
    BUILDING = "Building"
    READY = "Ready"
    REFUSED = "Refused"  # the profile's limits refuse the preparation: the reason says which and what to do
    FAILED = "Failed"


class PackageFile(LazyModel):
    """One file of a package zip, as its manifest describes it."""

    sha256: str
    rows: int = Field(ge=0)
    bytes: int = Field(ge=0)


PackageFiles = Annotated[dict[Key, PackageFile], AfterValidator(first_entries(MAX_ITEMS))]


class PackageRecord(LazyModel):
    """One export profile over one preparation state: its id derives from both, so a rebuild collides."""

    package_id: str
    preparation_id: str
    owner: str
    profile: str
    status: PackageStatus = PackageStatus.BUILDING
    state_hash: str
    package_key: str
    sha256: str | None = None
    size: int | None = None
    files: PackageFiles = Field(default_factory=dict)
    reason: Text | None = None  # why it was refused, or why the build failed
    # Builds started: a failed build may be asked for again, under a new execution name.
    attempt: int = Field(default=1, ge=1)
    created_at: str = Field(default_factory=utc_now)
