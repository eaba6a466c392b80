"""``ingestion_only_during_scoring``: the ingestion program runs beside the scoring program, as on Codabench,
both reaching one shared folder; the participant's code still never reaches the reference data."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from benchgen.environment import open_environment
from benchgen.ingest import ingest
from benchgen.sandbox.job import ProgramJob, ProgramResult
from benchgen.sandbox.local import LocalSandbox
from benchgen.scoring.engine import score_predictions
from cli.main import main
from tests.codabench_bundles import (
    CHEATING_MODEL_PY,
    INTERACTIVE_INGESTION_PY,
    LABELS,
    cheating_submission,
    code_submission,
    write_interactive_bundle,
)


def _score(tmp_path: Path, submission: Path) -> dict[str, object]:
    bundle = write_interactive_bundle(tmp_path / "bundle")
    out = tmp_path / "run"
    code = main(["score", "--bundle", str(bundle), "--submission", str(submission), "--out", str(out)])
    run: dict[str, object] = json.loads((out / "run.json").read_text())
    assert code == 0, run.get("failure_reason")
    return run


def test_the_ingestion_program_answers_the_scoring_program_while_both_run(tmp_path: Path) -> None:
    # given a scoring program that asks through shared/ and waits for the ingestion program's answers,
    # and a model that answers "setosa" to the five flowers (two of them are setosa)
    submission = code_submission(tmp_path / "submission.zip", "setosa")

    # when it is scored
    run = _score(tmp_path, submission)

    # then the two programs ran side by side and the scoring program scored the answers: 2 of 5; the
    # note it wrote is no column and no number, so it is ignored
    assert run["status"] == "Completed"
    assert (run["metrics"], run["other_metrics"]) == ({"accuracy": 2 / 5}, {})


def test_participant_code_run_beside_the_scoring_program_cannot_read_the_reference_data(
    tmp_path: Path,
) -> None:
    # given participant code that searches /app, /tmp, its folder and the one above for the answers
    submission = cheating_submission(tmp_path / "submission.zip")

    # when it is scored while the scoring program, which reads the answers, runs beside it
    run = _score(tmp_path, submission)

    # then it found nothing, answered "setosa" everywhere, and scored what that is worth
    assert run["metrics"] == {"accuracy": 2 / 5}


def test_the_cheating_model_finds_answers_it_can_reach(tmp_path: Path) -> None:
    # the control: run outside the sandbox from the reference data's folder, the same model answers right
    reference = write_interactive_bundle(tmp_path / "bundle") / "reference_data"
    (tmp_path / "model.py").write_text(CHEATING_MODEL_PY)
    script = (
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import model; "
        "print([model.predict(row) for row in 'abcde'])"
    )
    answered = subprocess.run(
        [sys.executable, "-c", script], cwd=reference, capture_output=True, text=True, check=True
    ).stdout
    assert answered.strip() == str(LABELS)


class OneAtATime:
    """A sandbox that runs programs only one after the other, as the sandbox function does."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def run(self, job: ProgramJob) -> ProgramResult:
        self.commands.append(job.command)
        return LocalSandbox().run(job)


def test_where_programs_cannot_run_side_by_side_the_ingestion_runs_first_and_leaves_shared_to_the_scoring(
    tmp_path: Path,
) -> None:
    # given an ingestion program that answers without waiting to be asked, and a sandbox that runs one
    # program at a time
    bundle = write_interactive_bundle(tmp_path / "bundle")
    (bundle / "ingestion_program" / "ingestion.py").write_text(
        INTERACTIVE_INGESTION_PY.replace(
            'while not os.path.exists(os.path.join(shared, "go"))', "while False"
        )
    )
    sandbox = OneAtATime()
    env = open_environment(bundle, tmp_path / "env")
    submission = code_submission(tmp_path / "submission.zip", "setosa")

    # when the submission is ingested and scored there
    ingest(env, submission, tmp_path / "out", workdir=tmp_path / "ingest", sandbox=sandbox)
    report = score_predictions(
        env,
        tmp_path / "out" / "prediction_output.zip",
        tmp_path / "out",
        workdir=tmp_path / "score",
        sandbox=sandbox,
    )

    # then nothing ran at ingest, the ingestion program ran before the scoring program, and the scoring
    # program found its answers in shared/: 2 of 5
    assert [command.split()[1] for command in sandbox.commands] == [
        "$ingestion_program/ingestion.py",
        "$program/score.py",
    ]
    assert report.metrics == {"accuracy": 2 / 5}


HANDSHAKE = Path(__file__).resolve().parents[2] / "examples" / "codabench-handshake"
BROKEN_MODEL_PY = """\
class Model:
    def fit(self, points, labels):
        raise ValueError("the model cannot be fitted: no features")
"""


def _broken_handshake(tmp_path: Path, *, scoring_gives_up: str) -> tuple[Path, Path]:
    """The handshake example with a model that fails, and a scoring program that waits one second for an
    answer, then does ``scoring_gives_up`` instead of its last words."""
    bundle = tmp_path / "bundle"
    shutil.copytree(HANDSHAKE / "bundle", bundle)
    score = bundle / "scoring_program" / "score.py"
    text = score.read_text().replace("WAIT_S = 20", "WAIT_S = 1")
    score.write_text(
        text.replace('        write_scores({"accuracy": -1, "rounds": round_number})\n', scoring_gives_up)
    )
    submission = tmp_path / "submission"
    shutil.copytree(HANDSHAKE / "submission", submission)
    (submission / "model.py").write_text(BROKEN_MODEL_PY)
    return bundle, submission


def _run(bundle: Path, submission: Path, out: Path) -> tuple[int, dict[str, object]]:
    code = main(["score", "--bundle", str(bundle), "--submission", str(submission), "--out", str(out)])
    run: dict[str, object] = json.loads((out / "run.json").read_text())
    return code, run


def test_an_ingestion_program_that_fails_beside_a_scoring_program_that_goes_on_is_a_warning_on_the_run(
    tmp_path: Path,
) -> None:
    # given a model that fails, and a scoring program that scores -1 when no answer comes
    bundle, submission = _broken_handshake(
        tmp_path, scoring_gives_up='        write_scores({"accuracy": -1, "rounds": round_number})\n'
    )

    # when it is scored
    code, run = _run(bundle, submission, tmp_path / "run")

    # then the run completed with what the scoring program wrote, and says the ingestion program failed
    # and why
    assert (code, run["status"], run["metrics"]) == (0, "Completed", {"accuracy": -1.0, "rounds": 0.0})
    [warning] = [w for w in run["warnings"] if "ingestion" in w]  # type: ignore[attr-defined]
    assert warning.startswith("the ingestion program, run beside the scoring program, exited with code 1:")
    assert "ValueError: the model cannot be fitted: no features" in warning


def test_a_run_failed_beside_a_failing_ingestion_program_says_which_program_failed_and_why(
    tmp_path: Path,
) -> None:
    # given a model that fails, and a scoring program that exits with code 3 when no answer comes
    bundle, submission = _broken_handshake(tmp_path, scoring_gives_up="        sys.exit(3)\n")

    # when it is scored
    code, run = _run(bundle, submission, tmp_path / "run")

    # then the run failed, and its reason names both programs with the tail of each one's stderr
    assert (code, run["status"]) == (2, "Failed")
    reason = str(run["failure_reason"])
    assert reason.startswith("the ingestion program, run beside the scoring program, exited with code 1:")
    assert "ValueError: the model cannot be fitted: no features\n" in reason
    assert reason.endswith("the scoring program exited with code 3:\nno predictions for round 0 after 1 s")
