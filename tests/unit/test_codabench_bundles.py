"""A bundle published for Codabench registers and scores unmodified, the way Codabench's worker runs it."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest
import yaml

from benchgen.admission import check_bundle
from benchgen.environment import open_environment
from benchgen.errors import ScoringError, SubmissionError
from benchgen.ingest import ingest
from benchgen.scoring.engine import score_predictions
from tests.codabench_bundles import DOCKER_IMAGE, LABELS, code_submission, results_submission, write_bundle


def _prediction_output(out: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(out / "prediction_output.zip") as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_codabench_bundle_with_null_optional_fields_passes_the_check(tmp_path: Path) -> None:
    # given a bundle that writes `computation: null`, `computation_indexes: null`, `description: null` ...
    bundle = write_bundle(tmp_path / "bundle", ingestion=True)

    # when it is checked and opened, then nothing is wrong and the nulls took their defaults
    assert check_bundle(bundle) == []
    env = open_environment(bundle, tmp_path / "env")
    columns = {column.key: column for column in env.spec.columns}
    assert columns["accuracy"].computation_indexes == []
    assert columns["duration"].hidden is False
    assert env.task.description == ""


def test_a_results_submission_is_copied_as_the_prediction_output_with_the_step_metadata(
    tmp_path: Path,
) -> None:
    # given a Codabench bundle with a scoring program and no cases.jsonl, and a zip of iris.predict
    env = open_environment(write_bundle(tmp_path / "bundle"), tmp_path / "env")
    submission = results_submission(tmp_path / "submission.zip", LABELS)

    # when it is ingested
    ingest(env, submission, tmp_path / "out", workdir=tmp_path / "work")

    # then the prediction output is the submitted file plus Codabench's metadata file
    output = _prediction_output(tmp_path / "out")
    assert sorted(output) == ["iris.predict", "metadata"]
    assert output["iris.predict"] == ("\n".join(LABELS) + "\n").encode()
    assert yaml.safe_load(output["metadata"]) == {
        "exitCode": None,
        "elapsedTime": None,
        "ingestionExitCode": None,
        "ingestionElapsedTime": None,
    }


def test_the_scoring_program_reads_the_durations_from_the_prediction_metadata(tmp_path: Path) -> None:
    # given a Codabench bundle whose ingestion program runs the submitted model, and a code submission
    env = open_environment(write_bundle(tmp_path / "bundle", ingestion=True), tmp_path / "env")
    submission = code_submission(tmp_path / "submission.zip", "setosa")

    # when it is ingested and scored
    ingested = ingest(env, submission, tmp_path / "out", workdir=tmp_path / "work")
    scored = score_predictions(
        env, tmp_path / "out" / "prediction_output.zip", tmp_path / "out", workdir=tmp_path / "s"
    )

    # then the scoring program found the ingestion's duration in input/res/metadata
    metadata = yaml.safe_load(_prediction_output(tmp_path / "out")["metadata"])
    assert metadata["ingestionExitCode"] == 0
    assert metadata["exitCode"] is None
    assert metadata["elapsedTime"] == metadata["ingestionElapsedTime"] == ingested.execution_time > 0
    assert scored.metrics == {"accuracy": 0.4, "duration": pytest.approx(ingested.execution_time)}


def test_the_runtime_mapped_from_the_docker_image_is_reported_with_what_differs(tmp_path: Path) -> None:
    env = open_environment(write_bundle(tmp_path / "bundle"), tmp_path / "env")

    report = ingest(
        env, results_submission(tmp_path / "s.zip", LABELS), tmp_path / "out", workdir=tmp_path / "w"
    )

    assert env.spec.docker_image == DOCKER_IMAGE
    assert report.runtime == f"legacy (mapped from docker_image {DOCKER_IMAGE})"
    [warning] = report.warnings
    assert warning.startswith(
        f"docker_image {DOCKER_IMAGE} runs in the legacy runtime, approximate: numbers can differ: numpy "
        "1.22 -> 1.23, scipy 1.8 -> 1.9, pandas 1.4 -> 1.5; Python 3.9 -> 3.11; numpy 1.22.4 -> 1.23.5, "
    )
    assert warning.endswith("cython 0.29.30 -> 0.29.32; not provided: theano, imutils, tensorflow")


def test_a_failing_ingestion_program_does_not_fail_a_results_submission(tmp_path: Path) -> None:
    # given an ingestion program that crashes, and a results submission (no metadata file)
    bundle = write_bundle(tmp_path / "bundle", ingestion=True, ingestion_py="raise SystemExit('no model')\n")
    env = open_environment(bundle, tmp_path / "env")
    submission = results_submission(tmp_path / "submission.zip", LABELS)

    # when it is ingested and scored
    ingested = ingest(env, submission, tmp_path / "out", workdir=tmp_path / "work")
    scored = score_predictions(
        env, tmp_path / "out" / "prediction_output.zip", tmp_path / "out", workdir=tmp_path / "s"
    )

    # then the failure is reported on the run, and the submitted predictions are scored
    assert ingested.warnings[1].startswith("the ingestion program exited with code 1:\nno model")
    assert yaml.safe_load(_prediction_output(tmp_path / "out")["metadata"])["ingestionExitCode"] == 1
    assert scored.metrics["accuracy"] == 1.0


def test_a_failing_ingestion_program_leaves_a_code_submission_to_the_scoring_program(tmp_path: Path) -> None:
    # given an ingestion program that crashes on a code submission, and a scoring program that then finds
    # no predictions
    bundle = write_bundle(tmp_path / "bundle", ingestion=True, ingestion_py="raise SystemExit('no model')\n")
    env = open_environment(bundle, tmp_path / "env")

    # when it is ingested, the step goes on with a warning and the exit code for the scoring program
    ingested = ingest(
        env, code_submission(tmp_path / "s.zip", "setosa"), tmp_path / "out", workdir=tmp_path / "w"
    )
    assert ingested.warnings[1].startswith("the ingestion program exited with code 1:\nno model\n")
    assert yaml.safe_load(_prediction_output(tmp_path / "out")["metadata"])["ingestionExitCode"] == 1
    assert [(p.program, p.exit_code, p.stderr_tail) for p in ingested.programs] == [
        ("ingestion program", 1, "no model")
    ]

    # then the scoring program decides: it fails, and the run's error names both programs
    with pytest.raises(ScoringError) as caught:
        score_predictions(
            env,
            tmp_path / "out" / "prediction_output.zip",
            tmp_path / "scored",
            workdir=tmp_path / "s",
            earlier=ingested.programs,
        )
    reason = str(caught.value)
    assert reason.startswith(
        "the ingestion program exited with code 1:\nno model\n"
        "the scoring program exited with code 1:\nTraceback (most recent call last):"
    )
    assert reason.splitlines()[-1].startswith("FileNotFoundError")
    assert [(p.program, p.exit_code) for p in caught.value.programs] == [("scoring program", 1)]


def test_a_zipped_program_folder_is_refused_as_codabench_would_fail_it(tmp_path: Path) -> None:
    # given a scoring program zipped with its folder (Codabench unpacks it as it is, and finds no metadata)
    bundle = write_bundle(tmp_path / "bundle")
    program = bundle / "scoring_program"
    with zipfile.ZipFile(bundle / "scoring_program.zip", "w") as archive:
        for path in sorted(program.iterdir()):
            archive.write(path, f"scoring_program/{path.name}")
    shutil.rmtree(program)
    competition = bundle / "competition.yaml"
    text = competition.read_text().replace(
        "scoring_program: scoring_program", "scoring_program: scoring_program.zip"
    )
    competition.write_text(text)

    # then the check says so, and how to zip it
    assert check_bundle(bundle) == [
        "scoring_program.zip: has no metadata.yaml at its top level (there is one in 'scoring_program/': a "
        "zip is taken as it is, as Codabench takes it, so zip the contents of that folder rather than the "
        "folder); add one with `command: python $program/<script>.py $input $output`"
    ]


def test_an_ingestion_program_may_not_write_the_step_metadata(tmp_path: Path) -> None:
    program = "import os, sys\nopen(os.path.join(sys.argv[2], 'metadata'), 'w').write('exitCode: 0')\n"
    env = open_environment(write_bundle(tmp_path / "b", ingestion=True, ingestion_py=program), tmp_path / "e")

    with pytest.raises(SubmissionError, match="already holds a file named metadata"):
        ingest(env, code_submission(tmp_path / "s.zip", "setosa"), tmp_path / "out", workdir=tmp_path / "w")


@pytest.mark.parametrize(
    ("cases", "problem"),
    [
        (b'{"flower": "setosa"}\n', "reference/cases.jsonl: line 1: id: Field required"),
        (b'{"id": "a"}\n{"id": "\xff"}\n', "reference/cases.jsonl: line 2 is not UTF-8 text"),
    ],
)
def test_reference_cases_only_the_scoring_program_reads_do_not_stop_a_results_submission(
    tmp_path: Path, cases: bytes, problem: str
) -> None:
    # given a bundle with only a scoring program, whose reference data holds a cases.jsonl of its own
    # format beside the solution (which the check leaves to the program), and a zip of arbitrary files
    bundle = write_bundle(tmp_path / "bundle")
    (bundle / "reference_data" / "cases.jsonl").write_bytes(cases)
    submission = results_submission(tmp_path / "submission.zip", LABELS)
    with zipfile.ZipFile(submission, "a") as archive:
        archive.writestr("notes/readme.txt", "trained on the train split\n")
        archive.writestr("weights.bin", b"\x00\xff")

    # when it is checked, ingested and scored
    problems = check_bundle(bundle)
    env = open_environment(bundle, tmp_path / "env")
    ingested = ingest(env, submission, tmp_path / "out", workdir=tmp_path / "work")
    scored = score_predictions(
        env, tmp_path / "out" / "prediction_output.zip", tmp_path / "out", workdir=tmp_path / "s"
    )

    # then the check and the run agree: the submitted files reach input/res and are scored, and the run
    # says why its cases are not counted
    assert problems == []
    assert sorted(_prediction_output(tmp_path / "out")) == [
        "iris.predict",
        "metadata",
        "notes/readme.txt",
        "weights.bin",
    ]
    assert scored.metrics == {"accuracy": 1.0, "duration": 0.0}
    assert ingested.total_questions == 0
    assert ingested.warnings[1].startswith(f"the cases are not counted: {problem}")


def test_a_code_submission_without_an_ingestion_program_is_refused_with_what_to_do(tmp_path: Path) -> None:
    env = open_environment(write_bundle(tmp_path / "bundle"), tmp_path / "env")

    with pytest.raises(SubmissionError, match="submit the prediction files without metadata"):
        ingest(env, code_submission(tmp_path / "s.zip", "setosa"), tmp_path / "out", workdir=tmp_path / "w")


SNOOPING_INGESTION = """\
import os, sys

input_dir, output_dir, submission_dir = sys.argv[1], sys.argv[2], sys.argv[3]
hidden = sys.argv[4]
sys.path.insert(0, submission_dir)
import model

roots = [input_dir, hidden, submission_dir, os.path.dirname(output_dir), os.path.dirname(os.getcwd())]
with open(os.path.join(output_dir, "seen.txt"), "w") as report:
    report.write("\\n".join(model.gold_files(roots)))
"""

SNOOPING_MODEL = """\
import os

GOLD = ("versi" + "color").encode()  # spelled apart so that this file does not match itself


def gold_files(roots):
    found = []
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    if GOLD in handle.read():
                        found.append(os.path.relpath(path, root))
    return found
"""


def test_participant_code_cannot_read_the_reference_data_during_ingestion(tmp_path: Path) -> None:
    # given an ingestion program and a submitted model that look for the gold labels everywhere in reach
    bundle = write_bundle(tmp_path / "bundle", ingestion=True, ingestion_py=SNOOPING_INGESTION)
    metadata = bundle / "ingestion_program" / "metadata.yaml"
    metadata.write_text(
        "command: python $program/ingestion.py $input $output $submission_program $hidden\n", encoding="utf-8"
    )
    env = open_environment(bundle, tmp_path / "env")
    submission = tmp_path / "submission.zip"
    with zipfile.ZipFile(submission, "w") as archive:
        archive.writestr("metadata", "description: snooping model\n")
        archive.writestr("model.py", SNOOPING_MODEL)

    # when it is ingested
    ingest(env, submission, tmp_path / "out", workdir=tmp_path / "work")

    # then neither $input, $hidden, the submission's folder, the step's folders nor the folder around the
    # program's own hold the reference data
    assert _prediction_output(tmp_path / "out")["seen.txt"] == b""


def test_an_ingestion_program_using_a_removed_numpy_name_fails_the_run_naming_it(tmp_path: Path) -> None:
    # given an ingestion program that falls back when np.int is gone, in a bundle whose image's numpy has it
    program = (
        "import os, sys\n"
        "import numpy as np\n"
        "try:\n"
        "    kind = np.int\n"
        "except AttributeError:\n"
        "    kind = None\n"
        "open(os.path.join(sys.argv[2], 'iris.predict'), 'w').write('setosa\\n')\n"
    )
    bundle = write_bundle(tmp_path / "bundle", ingestion=True, ingestion_py=program, runtime="scientific")
    env = open_environment(bundle, tmp_path / "e")

    # when a code submission is ingested, in the scientific runtime (numpy 2) the bundle names
    with pytest.raises(SubmissionError) as caught:
        ingest(env, code_submission(tmp_path / "s.zip", "setosa"), tmp_path / "out", workdir=tmp_path / "w")

    # then the step fails naming the name and the image's numpy, and keeps how the program ended
    assert str(caught.value).startswith("the ingestion program used np.int, which numpy removed in 1.24")
    assert f"numpy 1.22.4 in the bundle's image ({DOCKER_IMAGE}) has it" in str(caught.value)
    assert [(p.program, p.exit_code) for p in caught.value.programs] == [("ingestion program", 0)]
