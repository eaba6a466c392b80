"""A run's outputs are defined once, and the engine's reports name the files they wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.environment import open_environment
from benchgen.ingest import ingest
from benchgen.outputs import RunOutput, output_for_label
from benchgen.scoring.engine import score_predictions
from benchgen.zipwrite import zip_folder

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_output_ids_stay_what_stored_runs_are_keyed_by() -> None:
    # Run records keep their files under these ids: renaming one would lose every stored run's file.
    assert [output.value for output in RunOutput] == [
        "submission",
        "prediction_output",
        "scoring_output",
        "detailed_results_html",
        "detailed_results_json",
        "finetune_artifact",
        "scores",
        "scoring_log",
        "ingest_log",
        "failure_log",
        "inference_log",
    ]


def test_no_two_outputs_share_a_file_name_or_a_label() -> None:
    named = [output for output in RunOutput if output is not RunOutput.SUBMISSION]
    assert len({output.file_name for output in named}) == len(named)
    assert len({output.label for output in RunOutput}) == len(RunOutput)


def test_every_label_leads_back_to_its_output() -> None:
    assert {output_for_label(output.label) for output in RunOutput} == set(RunOutput)
    assert output_for_label("Logs") is None


def test_the_submission_has_no_file_name_of_its_own() -> None:
    with pytest.raises(ValueError, match="Submission File keeps the name it was uploaded with"):
        _ = RunOutput.SUBMISSION.file_name


def _written(out: Path) -> set[str]:
    return {path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_file()}


@pytest.mark.parametrize(
    ("example", "outputs"),
    [
        (
            "gsm8k-en",
            {RunOutput.SCORES, RunOutput.SCORING_OUTPUT, RunOutput.DETAILED_HTML, RunOutput.DETAILED_JSON},
        ),
        (
            "custom-program",
            {
                RunOutput.SCORES,
                RunOutput.SCORING_OUTPUT,
                RunOutput.DETAILED_HTML,
                RunOutput.DETAILED_JSON,
                RunOutput.SCORING_LOG,
            },
        ),
        (
            "codabench-multitask",
            {
                RunOutput.SCORES,
                RunOutput.SCORING_OUTPUT,
                RunOutput.DETAILED_HTML,
                RunOutput.DETAILED_JSON,
                RunOutput.SCORING_LOG,
            },
        ),
    ],
)
def test_the_reports_name_every_file_ingest_and_scoring_wrote(
    example: str, outputs: set[RunOutput], tmp_path: Path
) -> None:
    # given an example's bundle and submission
    env = open_environment(EXAMPLES / example / "bundle", tmp_path / "environment")
    # A submission of several files is the folder, zipped as it would be uploaded.
    submission = tmp_path / "submission.zip"
    zip_folder(EXAMPLES / example / "submission", submission)
    ingest_out, score_out = tmp_path / "ingested", tmp_path / "scored"

    # when it is ingested and scored
    ingested = ingest(env, submission, ingest_out, workdir=tmp_path / "ingest")
    scored = score_predictions(env, ingested.prediction_output, score_out, workdir=tmp_path / "score")

    # then each report names exactly the files its step left, each under its output's file name
    assert _written(ingest_out) == {ingested.prediction_output.relative_to(ingest_out).as_posix()}
    assert ingested.prediction_output == ingest_out / RunOutput.PREDICTION_OUTPUT.file_name
    assert set(scored.files) == outputs
    assert _written(score_out) == {output.file_name for output in outputs}
    assert all(path == score_out / output.file_name for output, path in scored.files.items())
