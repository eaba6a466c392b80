"""The score and artifact steps of a run over the in-memory ports: what a run records, what lands in the
bucket, what is started and announced, and that a duplicate event changes none of it."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from benchgen.bucket_layout import execution_name
from benchgen.records.runs import RunStatus
from benchgen.scoring.results import ScoreReport
from benchgen.steps.artifact import ArtifactBuild, RunMissing, RunNotCompleted, record_artifact_failure
from benchgen.steps.score import complete_scoring
from tests.unit.run_world import PREDICTION_KEY, SUBMISSION_KEY, Run


@pytest.fixture
def ingested(tmp_path: Path) -> Run:
    world = Run(tmp_path)
    world.ingest()
    assert world.run().status is RunStatus.RUNNING
    return world


def test_scoring_completes_the_run_publishes_its_files_starts_its_artifact_and_announces_it(
    ingested: Run,
) -> None:
    # when the prediction output is scored
    run = ingested.score()

    # then the run is Completed with half the cases right, as the user reads it
    assert run is not None and run == ingested.run()
    assert (run.status, run.overall_score, run.metrics["accuracy"]) == (RunStatus.COMPLETED, 0.5, 0.5)
    assert {name: run.counts[name] for name in ("total", "passed", "total_questions")} == {
        "total": 4,
        "passed": 2,
        "total_questions": 4,
    }
    assert run.claim is None and run.finished_at is not None
    # its outputs are in the bucket, each recorded on the run
    scored = {"runs/run-1/scores.json", "runs/run-1/scoring_output.zip", "runs/run-1/detailed_results.html"}
    assert scored <= set(ingested.store.uploads)
    assert scored <= set(run.files.values())
    assert json.loads(ingested.store.objects["runs/run-1/scores.json"])["accuracy"] == 0.5
    # the artifact's execution is started, and RunCompleted announced, once each
    assert ingested.starter.started == {execution_name("run-1"): {"run_id": "run-1"}}
    assert ingested.published == [
        ("RunCompleted", {"run_id": "run-1", "environment_id": "tiny", "overall_score": 0.5})
    ]


def test_a_duplicate_prediction_event_only_makes_sure_the_artifact_was_started(ingested: Run) -> None:
    # given a scored run
    ingested.score()
    before, uploads = ingested.run(), list(ingested.store.uploads)

    # when S3 delivers the prediction output's event again
    again = ingested.score()

    # then nothing is scored, written or announced again
    assert again is None
    assert ingested.run() == before
    assert ingested.store.uploads == uploads
    assert list(ingested.starter.started) == [execution_name("run-1")]
    assert [event for event, _ in ingested.published] == ["RunCompleted"]


def test_what_scoring_warns_of_is_kept_on_the_completed_run_after_what_ingest_noticed(ingested: Run) -> None:
    # given a run ingest left a warning on, and a scoring report that warns of a failed ingestion program
    ingested.runs.record_ingest("run-1", counts={}, warnings=["ingest: 1 duplicate id"], shards=None)
    report = ScoreReport(
        files={},
        scores={"accuracy": 0.5},
        metrics={"accuracy": 0.5},
        other_metrics={},
        overall_score=0.5,
        warnings=["the ingestion program, run beside the scoring program, exited with code 1:\nValueError"],
    )

    # when the run is completed with it
    run = complete_scoring(
        ingested.run(),
        report,
        store=ingested.store,
        runs=ingested.runs,
        starter=ingested.starter,
        publisher=ingested.published,
    )

    # then the run shows both warnings, ingest's first
    assert run is not None and run.status is RunStatus.COMPLETED
    assert run.warnings == [
        "ingest: 1 duplicate id",
        "the ingestion program, run beside the scoring program, exited with code 1:\nValueError",
    ]


def test_a_run_whose_environment_is_gone_fails_with_the_reason_and_announces_it(ingested: Run) -> None:
    # given the environment version the run was ingested for is no longer registered
    ingested.environments.records.clear()

    # when the prediction output is scored
    run = ingested.score()

    # then the run failed saying why and what to do, published no output, and RunFailed went out
    reason = "environment tiny version v1 is not registered: upload its bundle first"
    assert run is not None and (run.status, run.failure_reason) == (RunStatus.FAILED, reason)
    assert run.claim is None
    assert sorted(run.files.values()) == [PREDICTION_KEY, SUBMISSION_KEY]
    assert ingested.published == [("RunFailed", {"run_id": "run-1", "reason": reason})]
    assert ingested.starter.started == {}


def test_the_artifact_of_a_completed_run_is_uploaded_saved_as_its_dataset_and_linked(ingested: Run) -> None:
    # given a scored run
    ingested.score()

    # when the state machine builds its artifact
    answer = ingested.build_artifact()

    # then the artifact is in the bucket and on the run, the dataset names its source and its bytes, and
    # the run links the dataset
    key = "runs/run-1/finetune_artifact.zip"
    artifact = ingested.store.objects[key]
    assert (answer.emitted, answer.saved, answer.reason) == (True, True, None)
    dataset = ingested.datasets.get("ds-run-1")
    assert dataset is not None and answer.dataset == dataset
    assert (dataset.run_id, dataset.artifact_key) == ("run-1", key)
    assert dataset.artifact_sha256 == hashlib.sha256(artifact).hexdigest()
    assert dataset.name.startswith("Tiny math · m · 50.0% · ")
    run = ingested.run()
    assert key in run.files.values()
    assert (run.dataset_id, run.dataset_name, run.artifact_status) == ("ds-run-1", dataset.name, "Saved")
    with zipfile.ZipFile(ingested.store.download(key, ingested.root / "artifact.zip")) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert (manifest["run_id"], manifest["dataset_name"]) == ("run-1", dataset.name)


def test_building_the_artifact_again_gives_the_same_bytes_and_saves_nothing_twice(ingested: Run) -> None:
    # given a run whose artifact was built and saved
    ingested.score()
    first = ingested.build_artifact()
    artifact, run = ingested.store.objects["runs/run-1/finetune_artifact.zip"], ingested.run()
    saved = ingested.datasets.get("ds-run-1")

    # when the task runs again (a retried state machine step, or a second execution for the run)
    second = ingested.build_artifact()

    # then it describes the same dataset over the same bytes (only the record's own time differs), says
    # it saved nothing, and the dataset and the run are as they were
    assert second.saved is False
    assert _undated(second) == _undated(first) | {"saved": False}
    assert ingested.store.objects["runs/run-1/finetune_artifact.zip"] == artifact
    assert ingested.datasets.get("ds-run-1") == saved
    assert ingested.run() == run


def _undated(answer: ArtifactBuild) -> dict[str, object]:
    return answer.model_dump(exclude={"dataset": {"created_at"}})


def test_a_benchmark_without_finetune_settings_emits_no_artifact_and_says_why_on_the_run(
    tmp_path: Path,
) -> None:
    world = Run(tmp_path, finetune="")
    world.ingest()
    world.score()
    downloaded = len(world.store.downloads)

    answer = world.build_artifact()

    reason = "the benchmark's scoring program did not emit one"
    assert answer == ArtifactBuild(emitted=False, reason=reason)
    assert "runs/run-1/finetune_artifact.zip" not in world.store.objects
    assert (world.run().artifact_status, world.run().artifact_reason) == ("NotEmitted", reason)
    assert world.datasets.records == {}
    # the version's record says it has no finetune section: neither the bundle nor the verdicts are read
    assert world.store.downloads[downloaded:] == []


def test_a_caught_failure_of_the_pipeline_is_recorded_on_the_run(ingested: Run) -> None:
    ingested.score()

    record_artifact_failure("run-1", "BuildArtifact timed out", runs=ingested.runs)

    assert (ingested.run().artifact_status, ingested.run().artifact_reason) == (
        "Failed",
        "BuildArtifact timed out",
    )
    with pytest.raises(RunMissing, match="run run-9 does not exist"):
        record_artifact_failure("run-9", "lost", runs=ingested.runs)


def test_no_artifact_is_built_from_a_run_that_did_not_complete(ingested: Run) -> None:
    with pytest.raises(RunNotCompleted, match="run run-1 is not completed: no artifact can be built from it"):
        ingested.build_artifact()
