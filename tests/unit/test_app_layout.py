"""Programs that use Codabench's fixed /app paths run as on Codabench, and /app is never written on the
machine; where the sandbox cannot give a program /app, the run says so instead of running it wrongly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchgen.sandbox import local, runner
from cli.main import main
from tests.codabench_bundles import LABELS, cheating_submission, code_submission, results_folder, write_bundle

APP_SCORE_PY = """\
import os
import yaml

with open("/app/input/ref/iris.solution") as handle:
    truth = handle.read().split()
with open("/app/input/res/iris.predict") as handle:
    guess = handle.read().split()
with open("/app/input/res/metadata") as handle:
    metadata = yaml.safe_load(handle)
correct = sum(t == g for t, g in zip(truth, guess))
with open("/app/output/scores.txt", "w") as handle:
    handle.write(f"accuracy: {correct / len(truth)}\\nduration: {metadata.get('elapsedTime') or 0}\\n")
    handle.write(f"cwd: {os.getcwd()}\\n")
"""

APP_INGESTION_PY = """\
import sys

sys.path.insert(0, "/app/ingested_program")
import model

with open("/app/input_data/iris_test.data") as handle:
    rows = [line for line in handle.read().splitlines() if line]
with open("/app/output/iris.predict", "w") as handle:
    handle.write("\\n".join(model.predict(row) for row in rows) + "\\n")
"""


def _app_bundle(root: Path) -> Path:
    write_bundle(root, ingestion=True, ingestion_py=APP_INGESTION_PY, score_py=APP_SCORE_PY)
    (root / "scoring_program" / "metadata.yaml").write_text("command: python3 /app/program/score.py\n")
    (root / "ingestion_program" / "metadata.yaml").write_text("command: python /app/program/ingestion.py\n")
    return root


def _score(bundle: Path, submission: Path, out: Path) -> dict[str, object]:
    main(["score", "--bundle", str(bundle), "--submission", str(submission), "--out", str(out)])
    run: dict[str, object] = json.loads((out / "run.json").read_text())
    return run


@pytest.mark.skipif(os.geteuid() != 0, reason="the /app layout needs the runner's own file system (root)")
def test_programs_written_for_the_app_layout_score_a_code_and_a_results_submission(tmp_path: Path) -> None:
    # given a bundle whose commands and programs only name /app paths, and this machine without /app
    assert not os.path.lexists("/app")
    bundle = _app_bundle(tmp_path / "bundle")

    # when a code submission answering "setosa" and a results folder of the right labels are scored
    code_run = _score(bundle, code_submission(tmp_path / "code.zip", "setosa"), tmp_path / "code")
    results_run = _score(bundle, results_folder(tmp_path / "results", LABELS), tmp_path / "results-run")

    # then the ingestion program found the submitted model and the input data under /app, the scoring
    # program the answers and predictions, as Codabench's containers have them: 2 of 5, then 5 of 5
    assert code_run["status"] == "Completed", code_run.get("failure_reason")
    accuracies = [run["metrics"]["accuracy"] for run in (code_run, results_run)]  # type: ignore[index]
    assert accuracies == [2 / 5, 1.0]
    # and /app was never written on this machine
    assert not os.path.lexists("/app")


def test_without_root_a_command_naming_app_paths_fails_the_run_saying_what_to_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a runner that cannot make a file system of its own (not root)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    bundle = _app_bundle(tmp_path / "bundle")

    # when a results submission is scored by a program started as /app/program/score.py
    run = _score(bundle, results_folder(tmp_path / "results", LABELS), tmp_path / "run")

    # then the run fails with the reason, not with a program that ran in the wrong place, for both programs
    assert run["status"] == "Failed"
    assert run["failure_reason"] == (
        f"the ingestion program exited with code 126:\n"
        f"{local.APP_REFUSED}: python /app/program/ingestion.py\n"
        f"the scoring program exited with code 126:\n{local.APP_REFUSED}: python3 /app/program/score.py"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="the /app layout needs the runner's own file system (root)")
def test_participant_code_ingested_in_the_app_layout_cannot_read_the_reference_data(tmp_path: Path) -> None:
    # given participant code that searches /app, /tmp, its folder and the one above for the answers
    bundle = _app_bundle(tmp_path / "bundle")

    # when its ingestion runs with the /app layout
    run = _score(bundle, cheating_submission(tmp_path / "cheat.zip"), tmp_path / "run")

    # then it found nothing (there is no /app/input during ingestion): "setosa" everywhere, 2 of 5
    assert run["status"] == "Completed", run.get("failure_reason")
    assert run["metrics"]["accuracy"] == 2 / 5  # type: ignore[index]


def test_without_root_the_images_app_link_is_filled_with_the_programs_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given /app as the sandbox image makes it, a link to a folder under /tmp (pytest's folders are there)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    link = tmp_path / "app"
    link.symlink_to(scratch / "app")
    monkeypatch.setattr(runner, "APP", str(link))
    assert runner.app_links_possible()

    # when the runner, without root, prepares a program's /app
    runner._link_app({"program": "program", "input": "input", "output": "output"}, "/tmp/job-1/root")

    # then /app/program, /app/input (with ref and res inside) and /app/output lead to the staged folders
    assert {name: os.readlink(scratch / "app" / name) for name in ("program", "input", "output")} == {
        "program": "/tmp/job-1/root/program",
        "input": "/tmp/job-1/root/input",
        "output": "/tmp/job-1/root/output",
    }


def test_an_app_that_is_no_link_into_tmp_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a folder, or a link elsewhere, is the machine's own /app: the runner never writes there
    (tmp_path / "folder").mkdir()
    (tmp_path / "elsewhere").symlink_to("/var/app")
    for app in (tmp_path / "folder", tmp_path / "elsewhere"):
        monkeypatch.setattr(runner, "APP", str(app))
        assert not runner.app_links_possible()
