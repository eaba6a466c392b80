"""The examples that lean on Codabench's lenient worker end as Codabench's worker ends them, and the one
a newer numpy would score wrongly fails instead of completing.

Every expected value is worked out here from the example's own files (the answers, the submitted values,
the submitted model run on the inputs), never by BenchGen.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from cli.main import main
from tests.example_files import submitted_model, words

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(example: Path, out: Path) -> tuple[int, dict[str, Any]]:
    bundle, submission = example / "bundle", example / "submission"
    code = main(["score", "--bundle", str(bundle), "--submission", str(submission), "--out", str(out)])
    run: dict[str, Any] = json.loads((out / "run.json").read_text())
    return code, run


def _tree(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*")}


def test_a_scoring_program_keeps_scratch_files_beside_itself(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-scratch"
    truth = words(example / "bundle/reference_data/labels.solution")
    guess = words(example / "submission/labels.predict")
    program_before = _tree(example / "bundle/scoring_program")

    code, run = _run(example, tmp_path / "run")

    # then it wrote its scratch files (in a copy of its folder) and scored as on Codabench
    assert (code, run["status"]) == (0, "Completed"), run.get("failure_reason")
    assert run["metrics"] == {"accuracy": sum(t == g for t, g in zip(truth, guess, strict=True)) / len(truth)}
    # and nothing went back to the bundle
    assert _tree(example / "bundle/scoring_program") == program_before


def test_a_failing_ingestion_program_leaves_the_scoring_program_to_score(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-ingestion-fails"
    reviews = (example / "bundle/input_data/reviews.txt").read_text(encoding="utf-8").splitlines()
    truth = words(example / "bundle/reference_data/reviews.solution")
    model = submitted_model(example / "submission/model.py")
    # the model answers every review up to the first negation, where it raises
    answered = []
    for review in reviews:
        if " not " in review:
            break
        answered.append(model.predict(review))
    assert 0 < len(answered) < len(reviews)  # the example fails half-way, on purpose

    code, run = _run(example, tmp_path / "run")

    # then the run completes with what the scoring program made of the partial predictions
    assert (code, run["status"]) == (0, "Completed"), run.get("failure_reason")
    correct = sum(t == g for t, g in zip(truth, answered, strict=False))
    assert run["metrics"] == {"accuracy": correct / len(truth), "ingestion_ok": 0.0}
    # with a warning holding the ingestion's exit code and the end of its traceback
    warning = next(text for text in run["warnings"] if "ingestion program" in text)
    assert warning.startswith("the ingestion program exited with code 1:\n")
    assert "ValueError: cannot read a negation" in warning
    # and the run record keeps each program's ending, the ingestion's traceback included
    ended = {outcome["program"]: outcome for outcome in run["programs"]}
    assert ended["ingestion program"]["exit_code"] == 1
    assert ended["ingestion program"]["stderr_tail"].startswith("Traceback (most recent call last):")
    assert (ended["scoring program"]["exit_code"], ended["scoring program"]["stderr_tail"]) == (0, "")
    # as do the scoring output's logs, beside the scoring program's own
    with zipfile.ZipFile(tmp_path / "run" / run["files"]["scoring_output"]) as archive:
        logged = archive.read("logs/ingestion_stderr.txt").decode()
    assert logged == ended["ingestion program"]["stderr_tail"]


def test_a_zipped_folder_is_unpacked_as_it_is_as_codabench_unpacks_it(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-top-folder"
    with zipfile.ZipFile(example / "bundle/reference_data.zip") as archive:
        # the zip's one entry sits under a top folder, which Codabench keeps
        assert archive.namelist() == ["reference_data/values.solution"]
        truth = [float(value) for value in archive.read("reference_data/values.solution").split()]
    guess = [float(value) for value in words(example / "submission/values.predict")]

    code, run = _run(example, tmp_path / "run")

    assert (code, run["status"]) == (0, "Completed"), run.get("failure_reason")
    errors = [abs(t - g) for t, g in zip(truth, guess, strict=True)]
    assert run["metrics"] == {"mae": sum(errors) / len(errors)}


def test_a_removed_numpy_name_fails_the_run_instead_of_its_fallback_score(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-removed-alias"

    code, run = _run(example, tmp_path / "run")

    # then the run fails naming the name, the runtime's numpy and the image's, and no score is recorded
    assert (code, run["status"]) == (2, "Failed")
    reason = run["failure_reason"]
    assert reason.startswith("the scoring program used np.float, which numpy removed in 1.24: the scientific")
    assert "numpy 1.17.2 in the bundle's image (codalab/codalab-legacy:py37) has it" in reason
    assert "metrics" not in run
    # the scoring program itself exited 0, having written its fallback
    assert [(outcome["program"], outcome["exit_code"]) for outcome in run["programs"]] == [
        ("scoring program", 0)
    ]
