"""Ingest: predictions matched to the reference cases, with duplicates, unknown and missing ids counted."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from benchgen.environment import open_environment
from benchgen.errors import SubmissionError
from benchgen.ingest import ingest, ingest_results

CASE_IDS = ["q1", "q2", "q3", "q4"]


@pytest.fixture
def cases_path(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "question": f"Q {i}", "answer": "1"}) + "\n" for i in CASE_IDS),
        encoding="utf-8",
    )
    return path


def _submit(
    tmp_path: Path, records: Sequence[Mapping[str, object]], metadata: dict[str, object] | None = None
) -> Path:
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps({"predictions": records, "metadata": metadata or {}}), encoding="utf-8")
    return path


def _output(out_dir: Path) -> dict[str, Any]:
    with zipfile.ZipFile(out_dir / "prediction_output.zip") as archive:
        assert archive.namelist() == ["predictions.json"]
        output: dict[str, Any] = json.loads(archive.read("predictions.json"))
        return output


def test_predictions_are_written_in_case_order_with_counts(cases_path: Path, tmp_path: Path) -> None:
    records = [{"id": "q3", "prediction_text": "c"}, {"id": "q1", "prediction_text": "a"}]
    report = ingest_results(cases_path, _submit(tmp_path, records), tmp_path / "out", workdir=tmp_path / "w")
    output = _output(tmp_path / "out")
    assert [p["id"] for p in output["predictions"]] == ["q1", "q3"]
    assert (report.total_questions, report.answered_questions) == (4, 2)


def test_a_duplicate_id_keeps_its_first_prediction_and_is_reported(cases_path: Path, tmp_path: Path) -> None:
    records = [
        {"id": "q1", "prediction_text": "first"},
        {"id": "q1", "prediction_text": "second"},
        {"id": "q1", "prediction_text": "third"},
    ]
    report = ingest_results(cases_path, _submit(tmp_path, records), tmp_path / "out", workdir=tmp_path / "w")
    assert (report.duplicate_count, report.duplicate_ids) == (2, ["q1"])
    assert _output(tmp_path / "out")["predictions"] == [{"id": "q1", "prediction_text": "first"}]
    assert "2 prediction(s) repeat an id already given; the first one was kept (ids: q1)" in report.warnings


def test_unknown_ids_are_dropped_and_reported(cases_path: Path, tmp_path: Path) -> None:
    records = [{"id": "q1", "prediction_text": "a"}, {"id": "nope", "prediction_text": "b"}]
    report = ingest_results(cases_path, _submit(tmp_path, records), tmp_path / "out", workdir=tmp_path / "w")
    assert (report.unknown_count, report.unknown_ids) == (1, ["nope"])
    assert [p["id"] for p in _output(tmp_path / "out")["predictions"]] == ["q1"]


def test_missing_ids_count_as_unanswered(cases_path: Path, tmp_path: Path) -> None:
    records = [{"id": "q2", "prediction_text": "b"}]
    report = ingest_results(cases_path, _submit(tmp_path, records), tmp_path / "out", workdir=tmp_path / "w")
    assert (report.missing_count, report.missing_ids, report.status) == (3, ["q1", "q3", "q4"], "partial")
    metadata = _output(tmp_path / "out")["metadata"]
    assert metadata["answered_questions"] == 1
    assert metadata["missing_count"] == 3


def test_the_submitted_execution_time_is_kept(cases_path: Path, tmp_path: Path) -> None:
    records = [{"id": i, "prediction_text": "1"} for i in CASE_IDS]
    submission = _submit(tmp_path, records, {"execution_time": 41.5})
    report = ingest_results(cases_path, submission, tmp_path / "out", workdir=tmp_path / "w")
    assert (report.execution_time, report.status) == (41.5, "success")
    assert _output(tmp_path / "out")["metadata"]["execution_time"] == 41.5


def test_the_same_submission_gives_the_same_zip_bytes(cases_path: Path, tmp_path: Path) -> None:
    records = [{"id": i, "prediction_text": "1"} for i in CASE_IDS]
    submission = _submit(tmp_path, records, {"execution_time": 2})
    ingest_results(cases_path, submission, tmp_path / "a", workdir=tmp_path / "w")
    ingest_results(cases_path, submission, tmp_path / "b", workdir=tmp_path / "w")
    first = (tmp_path / "a" / "prediction_output.zip").read_bytes()
    assert first == (tmp_path / "b" / "prediction_output.zip").read_bytes()


def test_a_submission_whose_ids_all_miss_the_cases_is_refused(cases_path: Path, tmp_path: Path) -> None:
    records = [{"id": "x1", "prediction_text": "a"}, {"id": "x2", "prediction_text": "b"}]
    with pytest.raises(SubmissionError) as caught:
        ingest_results(cases_path, _submit(tmp_path, records), tmp_path / "out", workdir=tmp_path / "w")
    assert str(caught.value) == (
        "none of the 2 prediction ids matches a case id of this benchmark (first ids: x1, x2); "
        "check that predictions use the ids of cases.jsonl"
    )


def test_a_submission_with_no_predictions_is_refused(cases_path: Path, tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match=r"^predictions.json holds no predictions$"):
        ingest_results(cases_path, _submit(tmp_path, []), tmp_path / "out", workdir=tmp_path / "w")


INGESTION_PROGRAM = """
import json, os, sys
cases = [json.loads(line) for line in open(os.path.join(sys.argv[1], "cases.jsonl"))]
with open(os.path.join(sys.argv[2], "predictions.json"), "w") as f:
    json.dump({"predictions": [{"id": cases[0]["id"], "prediction_text": "1"}]}, f)
"""


def _bundle_with_ingestion_program(root: Path, program: str) -> Path:
    (root / "reference").mkdir(parents=True)
    (root / "reference" / "cases.jsonl").write_text(
        "".join(json.dumps({"id": i, "answer": "1"}) + "\n" for i in CASE_IDS), encoding="utf-8"
    )
    (root / "questions").mkdir()
    (root / "questions" / "cases.jsonl").write_text(
        "".join(json.dumps({"id": i, "question": f"Q {i}"}) + "\n" for i in CASE_IDS), encoding="utf-8"
    )
    (root / "ingestion").mkdir()
    (root / "ingestion" / "ingest.py").write_text(program, encoding="utf-8")
    (root / "ingestion" / "metadata.yaml").write_text(
        "command: python $program/ingest.py $input $output\n", encoding="utf-8"
    )
    (root / "competition.yaml").write_text(
        "version: 2\ntitle: T\ntemplate: math\n"
        "tasks:\n  - {index: 0, reference_data: reference, input_data: questions,\n"
        "     ingestion_program: ingestion}\n"
        "leaderboards:\n  - columns: [{title: Accuracy, key: accuracy}]\n",
        encoding="utf-8",
    )
    return root


def _code_submission(tmp_path: Path) -> Path:
    path = tmp_path / "submission.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata.yaml", "description: calls the model endpoint\n")
    return path


def test_an_ingestion_program_writes_the_prediction_output(tmp_path: Path) -> None:
    env = open_environment(
        _bundle_with_ingestion_program(tmp_path / "b", INGESTION_PROGRAM), tmp_path / "env"
    )
    report = ingest(env, _code_submission(tmp_path), tmp_path / "out", workdir=tmp_path / "w")
    assert (report.total_questions, report.answered_questions, report.status) == (4, 1, "partial")
    with zipfile.ZipFile(tmp_path / "out" / "prediction_output.zip") as archive:
        assert archive.namelist() == ["metadata", "predictions.json"]
        predictions = json.loads(archive.read("predictions.json"))["predictions"]
    assert predictions == [{"id": "q1", "prediction_text": "1"}]


def test_a_failing_ingestion_program_is_reported_with_its_stderr(tmp_path: Path) -> None:
    bundle = _bundle_with_ingestion_program(
        tmp_path / "b", "raise SystemExit('model endpoint unreachable')\n"
    )
    env = open_environment(bundle, tmp_path / "env")
    report = ingest(env, _code_submission(tmp_path), tmp_path / "out", workdir=tmp_path / "w")
    assert (
        "the ingestion program exited with code 1:\nmodel endpoint unreachable\n"
        "what it wrote is the prediction output, and the scoring program decides, as on Codabench"
    ) in report.warnings


def test_a_submission_zip_escaping_its_folder_is_refused_before_the_ingestion_program_runs(
    tmp_path: Path,
) -> None:
    # given an environment with an ingestion program, and a submission zip with an entry outside its folder
    bundle = _bundle_with_ingestion_program(tmp_path / "b", INGESTION_PROGRAM)
    env = open_environment(bundle, tmp_path / "env")
    submission = tmp_path / "submission.zip"
    with zipfile.ZipFile(submission, "w") as archive:
        archive.writestr("predictions.json", '{"predictions": []}')
        archive.writestr("../../outside.txt", "overwrite me")

    # when it is ingested, then it is refused naming the entry, and nothing was written outside
    with pytest.raises(SubmissionError, match=r"submission\.zip.*\.\./\.\./outside\.txt"):
        ingest(env, submission, tmp_path / "out", workdir=tmp_path / "w")
    assert not (tmp_path / "outside.txt").exists()
    assert not (tmp_path / "out" / "prediction_output.zip").exists()
