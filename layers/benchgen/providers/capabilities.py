"""What a connection accepts: training methods, model families, export profiles and limits.

A provider kind's capabilities are one :class:`ConnectionProfile` (the most it can do); a connection's
profile starts from them and may narrow them, never widen them (``benchgen.providers.checks``). A request
outside a profile is refused with :class:`benchgen.errors.Unsupported`, whose message names what is
unsupported and what would be accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import ConfigDict, Field, model_validator

from benchgen.lazy_model import LazyModel
from benchgen.training.export_profiles import PROFILES
from benchgen.vocabulary import Method

#: A model family entry meaning "any model": providers that train whatever base model they are given.
ANY_FAMILY = "*"
FAMILY_PATTERN = r"^(?:\*|[a-z0-9][a-z0-9.-]{0,63})$"

# How a family is recognised in a base model id, where its name alone is not in the id (Bedrock writes
# Llama 3.1 as "meta.llama3-1-8b-instruct-v1:0"); other families match by name, case-insensitively.
_FAMILY_MARKERS: dict[str, tuple[str, ...]] = {
    "nova": ("amazon.nova-",),
    "llama3.1": ("llama3-1", "llama-3.1", "llama3.1"),
    "claude-3-haiku": ("claude-3-haiku",),
}


def family_matches(family: str, base_model: str) -> bool:
    """Whether ``base_model`` (a provider's model id) belongs to ``family``."""
    if family == ANY_FAMILY:
        return True
    model = base_model.lower()
    return any(marker in model for marker in _FAMILY_MARKERS.get(family, (family,)))


def listed(values: Iterable[str]) -> str:
    """``values`` as a comma-separated list, or "nothing"."""
    return ", ".join(str(value) for value in values) or "nothing"


def either(words: Iterable[str]) -> str:
    """``words`` as alternatives: "a", "a or b", "a, b or c"."""
    *others, last = words
    return f"{', '.join(others)} or {last}" if others else last


class ConnectionLimits(LazyModel):
    """The most a connection takes in one training request; ``None`` where it sets no limit."""

    model_config = ConfigDict(extra="forbid")

    # Strict: a limit is a number, never a string or a boolean read as one.
    max_rows: int | None = Field(
        default=None, ge=1, le=10_000_000, strict=True, description="training rows per job"
    )
    max_row_tokens: int | None = Field(
        default=None, ge=1, le=10_000_000, strict=True, description="approximate tokens of one row"
    )


class ConnectionProfile(LazyModel):
    """What a connection accepts: training methods, model families, export profiles, and its limits."""

    model_config = ConfigDict(extra="forbid")

    methods: list[Method] = Field(min_length=1, max_length=len(Method))
    model_families: list[str] = Field(
        min_length=1,
        max_length=20,
        description=f"model families, e.g. nova, llama3.1; {ANY_FAMILY!r} accepts any base model",
        json_schema_extra={"items": {"type": "string", "pattern": FAMILY_PATTERN}},
    )
    export_profiles: list[str] = Field(
        min_length=1,
        max_length=len(PROFILES),
        description="ids of the export profiles whose files it takes (see the package export profiles)",
        json_schema_extra={"items": {"type": "string", "enum": list(PROFILES)}},
    )
    limits: ConnectionLimits = Field(default_factory=ConnectionLimits)

    @model_validator(mode="after")
    def _consistent(self) -> ConnectionProfile:
        for family in self.model_families:
            if not re.fullmatch(FAMILY_PATTERN, family):
                raise ValueError(
                    f"model family {family!r} must be {ANY_FAMILY!r} or 1-64 lowercase letters, digits, "
                    "'.' and '-' (e.g. nova, llama3.1)"
                )
        for profile_id in self.export_profiles:
            profile = PROFILES.get(profile_id)
            if profile is None:
                raise ValueError(
                    f"no export profile {profile_id!r}: the export profiles are {listed(PROFILES)}"
                )
            if not profile.methods & set(self.methods):
                raise ValueError(
                    f"export profile {profile_id} holds {listed(profile.methods)} rows, which the profile's "
                    f"methods ({listed(self.methods)}) leave out: add the method or drop the export profile"
                )
        return self
