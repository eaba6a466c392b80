"""The one timestamp format records keep."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """ISO-8601 UTC timestamp with a fixed width, so that string order is time order in sort keys."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
