"""How a run is presented: metric tiles in column order, file labels, summaries without the config."""

from __future__ import annotations

import time

from benchgen.outputs import RunOutput
from benchgen.records.runs import CaseScope, RunConfig, RunRecord, RunStatus
from benchgen.requests.runs import labelled_files, metric_tiles, new_run_id
from benchgen.requests.schemas.runs import RunSummary

COLUMNS = [
    {"title": "Exact match", "key": "exact_match", "index": 1, "precision": 3},
    {"title": "Accuracy", "key": "accuracy", "index": 0},
    {"title": "Secret", "key": "hidden_metric", "index": 2, "hidden": True},
]


def _run(**changes: object) -> RunRecord:
    return RunRecord(
        run_id="r1", environment_id="gsm8k", environment_version="1", model="m", owner="u"
    ).model_copy(update=changes)


def test_tiles_follow_the_column_index_not_the_list_order() -> None:
    tiles = metric_tiles({"exact_match": 0.5, "accuracy": 0.75}, COLUMNS)
    assert [(t.title, t.key, t.value, t.precision) for t in tiles] == [
        ("Accuracy", "accuracy", 0.75, None),
        ("Exact match", "exact_match", 0.5, 3),
    ]


def test_a_hidden_column_gives_no_tile() -> None:
    tiles = metric_tiles({"accuracy": 0.75, "hidden_metric": 1.0}, COLUMNS)
    assert [t.key for t in tiles] == ["accuracy"]


def test_a_metric_without_a_column_comes_last_titled_by_its_key() -> None:
    tiles = metric_tiles({"zeta": 2.0, "accuracy": 0.75}, COLUMNS)
    assert [(t.title, t.value) for t in tiles] == [("Accuracy", 0.75), ("zeta", 2.0)]


def test_columns_without_an_index_keep_their_list_order() -> None:
    columns = [{"title": "B", "key": "b"}, {"title": "A", "key": "a"}]
    assert [t.title for t in metric_tiles({"a": 1.0, "b": 2.0}, columns)] == ["B", "A"]


def test_files_are_labelled_in_reading_order() -> None:
    run = _run(
        status=RunStatus.COMPLETED,
        submission_key="submissions/r1/p.zip",
        files={
            RunOutput.FAILURE_LOG: "runs/r1/logs/failure.log",
            RunOutput.FINETUNE_ARTIFACT: "runs/r1/finetune_artifact.zip",
            RunOutput.SCORING_OUTPUT: "runs/r1/scoring_output.zip",
        },
    )
    assert labelled_files(run) == {
        "Submission File": "submissions/r1/p.zip",
        "Scoring Output": "runs/r1/scoring_output.zip",
        "Finetune Artifact": "runs/r1/finetune_artifact.zip",
        "Failure Log": "runs/r1/logs/failure.log",
    }


def test_a_run_stored_with_files_keyed_by_label_reads_them_by_output() -> None:
    # given a run as stored when its files were keyed by their labels
    stored = {
        "run_id": "r1",
        "environment_id": "gsm8k",
        "environment_version": "1",
        "model": "m",
        "owner": "u",
        "files": {"Scoring Output": "runs/r1/scoring_output.zip", "Ingest Log": "predictions/r1/ingest.log"},
    }
    # when it is read
    run = RunRecord.model_validate(stored)
    # then each file is under its output, and the API shows the labels it showed before
    assert run.files == {
        RunOutput.SCORING_OUTPUT: "runs/r1/scoring_output.zip",
        RunOutput.INGEST_LOG: "predictions/r1/ingest.log",
    }
    assert labelled_files(run) == stored["files"]


def test_a_pending_runs_submission_is_not_listed_before_it_is_ingested() -> None:
    run = _run(status=RunStatus.PENDING, submission_key="submissions/r1/p.zip")
    assert labelled_files(run) == {}


def test_a_summary_never_carries_the_run_config() -> None:
    run = _run(run_config=RunConfig(environment_variables={"API_KEY": "secret"}))
    summary = RunSummary.of(run)
    assert "run_config" not in summary.model_dump()
    assert "secret" not in summary.model_dump_json()


def test_a_summary_says_how_many_cases_a_scoped_run_covers() -> None:
    scoped = _run(case_scope=CaseScope(key="runs/r1/case_scope.json", count=4))
    assert RunSummary.of(scoped).case_scope == 4
    assert RunSummary.of(_run()).case_scope is None


def test_run_ids_are_32_hex_digits_that_sort_by_creation() -> None:
    first = new_run_id()
    time.sleep(0.002)
    second = new_run_id()
    assert len(first) == 32 and int(first, 16) >= 0
    assert first < second
