"""The one timestamp format records keep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utc_now() -> str:
    """ISO-8601 UTC timestamp with a fixed width, so that string order is time order in sort keys."""
    return datetime.now(UTC).strftime(_FORMAT)


def utc_in(seconds: float) -> str:
    """The timestamp ``seconds`` from now, in :func:`utc_now`'s format."""
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime(_FORMAT)


def wait_until(seconds: int) -> str:
    """The moment at least ``seconds`` from now, rounded up to the whole second, in the form a Step
    Functions Wait's ``TimestampPath`` reads (RFC 3339 in UTC with a capital T and Z, no fraction)."""
    moment = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=seconds + 1)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
