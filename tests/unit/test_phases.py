"""A phase of several tasks is scored task by task and merged as Codabench's leaderboard merges it; a run
names its phase (`benchgen score --phase`), the first one by default."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from cli.main import main
from tests.codabench_bundles import LABELS, results_folder, write_two_task_bundle


def _score(tmp_path: Path, out: str, *options: str) -> tuple[int, dict[str, object]]:
    bundle = write_two_task_bundle(tmp_path / "bundle")
    folder = tmp_path / "results"
    if not folder.exists():
        results_folder(folder, LABELS)
    run_dir = tmp_path / out
    code = main(
        ["score", "--bundle", str(bundle), "--submission", str(folder), "--out", str(run_dir), *options]
    )
    return code, json.loads((run_dir / "run.json").read_text())


def test_every_task_of_the_first_phase_is_scored_and_the_columns_merged_as_codabench_ranks_them(
    tmp_path: Path,
) -> None:
    # given a phase of two tasks, and a submission right on 5 of 5 flowers of task 0 and 2 of 5 of task 1
    # when it is scored without naming a phase
    code, run = _score(tmp_path, "run")

    # then both tasks are scored: each task's own values are kept, the accuracy column is their sum (what
    # Codabench ranks a multi-task submission by) and the computed mean pools both tasks' accuracies
    assert (code, run["status"], run["phase"]) == (0, "Completed", "Development")
    assert run["breakdowns"] == {
        "task": {
            "0 Iris": {"accuracy": 1.0, "duration": 0.0},
            "1 Iris B": {"accuracy": 0.4, "duration": 0.0},
        }
    }
    assert run["metrics"] == {"accuracy": 1.0 + 0.4, "duration": 0.0, "mean": (1.0 + 0.4) / 2}
    assert run["overall_score"] == 1.4
    # and each task's outputs are in a folder of their own
    with zipfile.ZipFile(tmp_path / "run" / "scoring_output.zip") as archive:
        names = set(archive.namelist())
    assert {"task-0/scores.txt", "task-1/scores.txt"} <= names
    with zipfile.ZipFile(tmp_path / "run" / "prediction_output.zip") as archive:
        assert {"task-0/iris.predict", "task-1/iris.predict"} <= set(archive.namelist())


@pytest.mark.parametrize("chosen", ["Final", "1"])
def test_a_phase_named_by_name_or_index_runs_its_own_tasks(tmp_path: Path, chosen: str) -> None:
    # when the second phase, which holds task 1 only, is chosen
    code, run = _score(tmp_path, "run", "--phase", chosen)

    # then only task 1 is scored, as a run of one task
    assert (code, run["status"], run["phase"]) == (0, "Completed", "Final")
    assert run["metrics"] == {"accuracy": 0.4, "duration": 0.0, "mean": 0.4}


def test_an_unknown_phase_fails_the_run_naming_the_phases_there_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, run = _score(tmp_path, "run", "--phase", "Test")

    assert (code, run["status"]) == (2, "Failed")
    assert run["failure_reason"] == (
        "this environment has no phase 'Test'; name one of its phases: 0 (Development), 1 (Final)"
    )
