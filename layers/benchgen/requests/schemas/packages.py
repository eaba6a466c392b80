"""The bodies of ``/preparations/{id}/packages`` and ``/packages``."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from benchgen.lazy_model import LazyModel
from benchgen.records.packages import PackageRecord
from benchgen.training.export_profiles import PROFILES

PROFILE_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"


class CreatePackageRequest(LazyModel):
    model_config = ConfigDict(extra="forbid")

    profile: str = Field(
        pattern=PROFILE_PATTERN,
        description="the export profile: " + ", ".join(PROFILES),
        examples=["openai-chat"],
    )


class PackageView(PackageRecord):
    """The package; when it is Ready, a short-lived URL to download its zip."""

    download_url: str | None = None
    expires_in: int | None = None


class PackageList(LazyModel):
    items: list[PackageRecord]
    next_token: str | None = None
