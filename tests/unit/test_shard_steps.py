"""The ShardedScoring steps over the in-memory ports: a run cut into shards is scored shard by shard,
merged into the files a whole run gets, and completed once; a shard that fails fails the run naming it."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from benchgen.bucket_layout import execution_name, prediction_shard_key, sharded_execution_name
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.steps.shards import ShardFailed, record_sharded_failure
from tests.unit.run_world import Run

SHARDS = 2  # the four cases of the tiny benchmark, two a shard


@pytest.fixture
def sharded(tmp_path: Path) -> Run:
    """A run ingested on a version registered with shards of two cases, handed to ShardedScoring."""
    world = Run(tmp_path / "sharded", shard_cases=SHARDS)
    world.ingest()
    world.score()
    return world


def _whole(root: Path) -> Run:
    world = Run(root / "whole")
    world.ingest()
    world.score()
    return world


def _scored(world: Run) -> None:
    for shard in range(SHARDS):
        world.score_shard(shard)
        world.build_shard_artifact(shard)


def _member(world: Run, key: str, name: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(world.store.objects[key])) as archive:
        return archive.read(name)


def _outcome(run: RunRecord) -> dict[str, object]:
    """What a user reads on the run, apart from times and the duration ingest measured."""
    return {
        "status": run.status,
        "overall_score": run.overall_score,
        "metrics": {name: value for name, value in run.metrics.items() if name != "duration"},
        "counts": run.counts,
        "files": sorted(run.files),
    }


def test_registration_cuts_the_cases_into_shards_and_ingest_splits_the_predictions_alike(
    sharded: Run,
) -> None:
    # then the run records the plan registration cut, and each shard's predictions are in the bucket
    plan = sharded.run().shards
    assert plan is not None and (plan.cases, plan.size, plan.count) == (4, 2, SHARDS)
    assert {prediction_shard_key("run-1", shard) for shard in range(SHARDS)} <= set(sharded.store.objects)
    items = json.loads(sharded.store.objects["predictions/run-1/shards/items.json"])
    assert items == [{"run_id": "run-1", "shard": 0}, {"run_id": "run-1", "shard": 1}]


def test_scoring_a_run_cut_into_shards_starts_sharded_scoring_and_leaves_the_run_running(
    sharded: Run,
) -> None:
    assert sharded.sharded_starter.started == {
        sharded_execution_name("run-1"): {
            "run_id": "run-1",
            "items_key": "predictions/run-1/shards/items.json",
        }
    }
    assert sharded.run().status is RunStatus.RUNNING
    assert sharded.starter.started == {} and sharded.published == []


def test_a_scored_shard_leaves_its_verdicts_in_its_score_part(sharded: Run) -> None:
    # when the second shard is scored
    answer = sharded.score_shard(1)

    # then its part lists its files and holds the verdicts of its two cases, in case order
    assert answer == {"run_id": "run-1", "shard": 1}
    listing = json.loads(sharded.store.objects["runs/run-1/parts/score/00001.json"])
    assert "verdicts.jsonl" in listing["files"]
    verdicts = sharded.store.objects["runs/run-1/parts/score/00001/verdicts.jsonl"].splitlines()
    assert [json.loads(line)["case_id"] for line in verdicts] == ["q3", "q4"]


def test_merging_the_shards_completes_the_run_as_the_whole_run_completes(
    sharded: Run, tmp_path: Path
) -> None:
    # given every shard scored and its examples collected
    _scored(sharded)

    # when the scores are merged
    answer = sharded.reduce_scores()

    # then the run reads as the same run scored whole, with the same verdicts, and it is announced once
    whole = _whole(tmp_path)
    assert answer == {"run_id": "run-1", "status": "Completed"}
    assert _outcome(sharded.run()) == _outcome(whole.run())
    output = "runs/run-1/scoring_output.zip"
    assert _member(sharded, output, "verdicts.jsonl") == _member(whole, output, "verdicts.jsonl")
    assert sharded.starter.started == {execution_name("run-1"): {"run_id": "run-1"}}
    assert sharded.published == [
        ("RunCompleted", {"run_id": "run-1", "environment_id": "tiny", "overall_score": 0.5})
    ]


def test_the_artifact_merged_from_the_shards_is_the_whole_runs_byte_for_byte(
    sharded: Run, tmp_path: Path
) -> None:
    _scored(sharded)
    sharded.reduce_scores()

    built = sharded.build_artifact()

    whole = _whole(tmp_path)
    whole.build_artifact()
    key = "runs/run-1/finetune_artifact.zip"
    assert built.emitted is True
    assert sharded.store.objects[key] == whole.store.objects[key]


def test_merging_again_after_the_run_completed_changes_nothing(sharded: Run) -> None:
    # given a run whose shards were merged
    _scored(sharded)
    sharded.reduce_scores()
    before, uploads = sharded.run(), list(sharded.store.uploads)

    # when the merge runs again (a second execution)
    with pytest.raises(ShardFailed, match="run run-1 is Completed, no longer Running: its shards stop here"):
        sharded.reduce_scores()

    # then nothing is written, started or announced again
    assert sharded.run() == before
    assert sharded.store.uploads == uploads
    assert list(sharded.starter.started) == [execution_name("run-1")]
    assert [event for event, _ in sharded.published] == ["RunCompleted"]


def test_a_shard_whose_predictions_are_missing_fails_the_run_naming_the_shard(sharded: Run) -> None:
    # given the second shard's prediction output is not in the bucket
    del sharded.store.objects[prediction_shard_key("run-1", 1)]

    # when that shard is scored
    with pytest.raises(ShardFailed) as failed:
        sharded.score_shard(1)

    # then the run failed with a reason naming the shard and its cases, and RunFailed went out
    reason = str(failed.value)
    assert reason.startswith("scoring shard 2 of 2 (cases 3-4): ")
    run = sharded.run()
    assert (run.status, run.failure_reason) == (RunStatus.FAILED, reason)
    assert sharded.published == [("RunFailed", {"run_id": "run-1", "reason": reason})]


def test_a_shard_of_a_run_that_already_failed_stops_without_changing_it(sharded: Run) -> None:
    # given a run that failed in its second shard
    del sharded.store.objects[prediction_shard_key("run-1", 1)]
    with pytest.raises(ShardFailed):
        sharded.score_shard(1)
    failed = sharded.run()

    # when the first shard's step runs after it
    with pytest.raises(ShardFailed, match="run run-1 is Failed, no longer Running: its shards stop here"):
        sharded.build_shard_artifact(0)

    # then the run keeps the first failure, announced once
    assert sharded.run() == failed
    assert [event for event, _ in sharded.published] == ["RunFailed"]


def test_a_run_scored_whole_has_no_shards_to_score(tmp_path: Path) -> None:
    world = Run(tmp_path)
    world.ingest()

    with pytest.raises(ShardFailed, match="run run-1 is not scored in shards: nothing to do"):
        world.score_shard(0)
    assert world.run().status is RunStatus.RUNNING


def test_a_failure_the_state_machine_caught_fails_the_running_run_and_only_a_running_one(
    sharded: Run,
) -> None:
    # when ShardedScoring records a shard step that ran out of time before it could say why
    record_sharded_failure("run-1", "scoring in shards stopped", runs=sharded.runs)

    # then the run failed with the state machine's sentence
    failed = sharded.run()
    assert (failed.status, failed.failure_reason) == (RunStatus.FAILED, "scoring in shards stopped")
    # and a later one changes nothing: the first sentence stands
    record_sharded_failure("run-1", "merging the scores stopped", runs=sharded.runs)
    assert sharded.run() == failed
