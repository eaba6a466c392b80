"""One structured log line for every change of a run's status or artifact status.

Every transition is a conditional write through ``RunsRepo`` (``create`` and its named transitions), so
that is where the line is written: the step that made the change logs it, with what the run was before.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger

logger = Logger(child=True)

#: The run fields whose changes are transitions, and the field that says why the new value was reached.
TRACKED = {"status": "failure_reason", "artifact_status": "artifact_reason"}
#: The times a run records at its transitions; the latest is when the previous transition happened.
_TRANSITION_TIMES = ("created_at", "started_at", "finished_at")


def log_transitions(run_id: str, before: Mapping[str, Any], changes: Mapping[str, Any]) -> None:
    """Log each tracked field that ``changes`` moves away from its value in ``before`` (the stored item).

    ``before`` is empty for a run being created; its duration is then zero.
    """
    now = datetime.now(UTC)
    times = [str(before[name]) for name in _TRANSITION_TIMES if before.get(name)]
    since = _parse(max(times)) if times else now
    for field, reason_field in TRACKED.items():
        if changes.get(field) is None:
            continue
        previous, current = before.get(field), str(changes[field])
        if previous == current:
            continue
        details = {
            "run_id": run_id,
            "environment_id": before.get("environment_id", changes.get("environment_id")),
            "field": field,
            "from_status": previous,
            "to_status": current,
            "duration_s": round((now - since).total_seconds(), 3),
        }
        reason = changes.get(reason_field)
        if reason:
            details["reason"] = reason
        logger.info("run transition", extra=details)


def _parse(timestamp: str) -> datetime:
    return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def log_training_transition(training_run_id: str, status: str, provider_status: str | None) -> None:
    """One line for each status a training run reaches, with the provider's own word for it."""
    logger.info(
        "training run transition",
        extra={"training_run_id": training_run_id, "to_status": status, "provider_status": provider_status},
    )
