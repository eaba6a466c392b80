"""Every change of a run's status is logged once, with what a reader needs to follow the run."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from benchgen.aws.tables.runs import RunsRepo
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.settings import Settings

FIELDS = ("run_id", "environment_id", "field", "from_status", "to_status", "duration_s")


def _transitions(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        {name: getattr(record, name) for name in (*FIELDS, "reason") if hasattr(record, name)}
        for record in caplog.records
        if record.getMessage() == "run transition"
    ]


def test_each_status_change_of_a_run_is_one_line_with_its_duration_and_reason(
    aws: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    runs = RunsRepo(aws.runs_table)
    caplog.set_level(logging.INFO)

    # given a run that is created, started, then fails; with a duplicate start in between
    runs.create(
        RunRecord(run_id="r-1", environment_id="gsm8k", environment_version="v1", model="m", owner="o")
    )
    time.sleep(0.05)
    key, filename = "submissions/r-1/p.zip", "p.zip"
    assert runs.start("r-1", submission_key=key, submission_filename=filename)
    assert not runs.start("r-1", submission_key=key, submission_filename=filename)
    runs.record_ingest("r-1", counts={"total": 3}, warnings=[], shards=None)
    time.sleep(0.05)
    runs.fail("r-1", "predictions.json: not JSON")

    # then each transition, and only those, was logged once with the run, its environment and timing
    lines = _transitions(caplog)
    assert [(line["from_status"], line["to_status"]) for line in lines] == [
        (None, "Pending"),
        ("Pending", "Running"),
        ("Running", "Failed"),
    ]
    assert all(
        (line["run_id"], line["environment_id"], line["field"]) == ("r-1", "gsm8k", "status")
        for line in lines
    )
    assert lines[0]["duration_s"] == 0
    assert all(0.05 <= line["duration_s"] < 5 for line in lines[1:])
    assert lines[2]["reason"] == "predictions.json: not JSON"
    assert "reason" not in lines[1]


def test_a_completed_run_logs_its_artifact_status_as_a_transition_of_its_own(
    aws: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    runs = RunsRepo(aws.runs_table)
    runs.create(
        RunRecord(
            run_id="r-2",
            environment_id="gsm8k",
            environment_version="v1",
            model="m",
            owner="o",
            status=RunStatus.RUNNING,
        )
    )
    caplog.set_level(logging.INFO)
    caplog.clear()

    # when the run completes and its artifact is awaited, in one write
    runs.complete(
        "r-2",
        overall_score=1.0,
        metrics={},
        other_metrics={},
        breakdowns={},
        counts={},
        execution_name="run-r-2",
    )

    # then both changes are logged, each under its field
    assert [(line["field"], line["from_status"], line["to_status"]) for line in _transitions(caplog)] == [
        ("status", "Running", "Completed"),
        ("artifact_status", None, "Pending"),
    ]
