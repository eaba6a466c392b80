"""Runs scored in shards on the local cloud: the ShardedScoring state machine's Distributed Map, executed
by moto, gives the same run files as the same run scored whole.

Two clouds of the same stack: one deployed with ``benchgen:shardCases`` of 7 (the 50 cases of gsm8k-tr
are then scored in 8 shards), one with the default (they run whole).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.aws.tables.runs import RunsRepo
from benchgen.bucket_layout import case_shard_key, execution_name, sharded_execution_name
from benchgen.outputs import RunOutput
from benchgen.records.runs import ArtifactStatus, RunRecord, RunStatus
from examplegen.writing import write_bundle_zip
from infra.sizing import SHARD_CASES
from localcloud.cloud import LocalCloud

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ENVIRONMENT = "gsm8k-tr"
SHARD_SIZE = 7
RUN_FILES = (
    "scores.json",
    "scoring_output.zip",
    "detailed_results.json",
    "detailed_results.html",
    "finetune_artifact.zip",
)


@pytest.fixture(scope="module")
def sharded_stacks() -> dict[str, dict[str, Any]]:
    """The stacks deployed with `cdk deploy -c benchgen:shardCases=7`."""
    from infra.synth import synth_stacks

    return synth_stacks({SHARD_CASES: str(SHARD_SIZE)})


def _forget_outside_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def sharded_cloud(
    sharded_stacks: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalCloud]:
    _forget_outside_settings(monkeypatch)
    with LocalCloud(sharded_stacks) as started:
        yield started


def _table(cloud: LocalCloud, prefix: str) -> str:
    return next(name for logical_id, name in cloud.table_names.items() if logical_id.startswith(prefix))


def _run(cloud: LocalCloud, run_id: str) -> RunRecord:
    run = RunsRepo(_table(cloud, "Runs")).get(run_id)
    assert run is not None
    return run


def _register(cloud: LocalCloud, tmp_path: Path) -> None:
    archive = write_bundle_zip(EXAMPLES / ENVIRONMENT / "bundle", tmp_path / f"{ENVIRONMENT}.zip")
    key = f"environments/{ENVIRONMENT}/v1/bundle.zip"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive.read_bytes())
    cloud.settle()


def _submit(cloud: LocalCloud, run_id: str) -> None:
    submission = next(iter(sorted((EXAMPLES / ENVIRONMENT / "submission").glob("predictions.*"))))
    cloud.client("s3").put_object(
        Bucket=cloud.bucket,
        Key=f"submissions/{run_id}/{submission.name}",
        Body=submission.read_bytes(),
        Metadata={"environment": ENVIRONMENT, "version": "v1", "model": "Qwen2.5-7B-LoRA"},
    )
    cloud.settle(timeout=120)


def _files(cloud: LocalCloud, run_id: str) -> dict[str, bytes]:
    s3 = cloud.client("s3")
    return {
        name: s3.get_object(Bucket=cloud.bucket, Key=f"runs/{run_id}/{name}")["Body"].read()
        for name in RUN_FILES
    }


def _outcome(run: RunRecord) -> dict[str, Any]:
    """What a user reads on the run, apart from times and ids."""
    return {
        "status": run.status,
        "overall_score": run.overall_score,
        "metrics": run.metrics,
        "other_metrics": run.other_metrics,
        "breakdowns": run.breakdowns,
        "counts": run.counts,
        "warnings": run.warnings,
        "artifact_status": run.artifact_status,
        "files": sorted(run.files),
    }


def _map_events(cloud: LocalCloud, run_id: str) -> list[str]:
    arn = cloud.execution_arn(sharded_execution_name(run_id), cloud.state_machine_arns["ShardedScoring"])
    history = cloud.client("stepfunctions").get_execution_history(executionArn=arn, maxResults=1000)
    return [event["type"] for event in history["events"] if event["type"].startswith("MapRun")]


def _map_items(cloud: LocalCloud, run_id: str) -> dict[str, int]:
    """How many items the run's Map run processed, and how they ended."""
    sfn = cloud.client("stepfunctions")
    arn = cloud.execution_arn(sharded_execution_name(run_id), cloud.state_machine_arns["ShardedScoring"])
    (map_run,) = sfn.list_map_runs(executionArn=arn)["mapRuns"]
    counts: dict[str, int] = sfn.describe_map_run(mapRunArn=map_run["mapRunArn"])["itemCounts"]
    return counts


def _run_through(cloud: LocalCloud, tmp_path: Path, run_id: str) -> tuple[RunRecord, dict[str, bytes]]:
    _register(cloud, tmp_path)
    _submit(cloud, run_id)
    cloud.wait_for_execution(execution_name(run_id), timeout=120)
    cloud.settle(timeout=120)
    return _run(cloud, run_id), _files(cloud, run_id)


def test_a_run_scored_in_shards_writes_the_same_files_as_the_run_scored_whole(
    sharded_stacks: dict[str, dict[str, Any]],
    stack_templates: dict[str, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    _forget_outside_settings(monkeypatch)
    # Given the same environment and submission, once on a stack that shards above 7 cases
    with LocalCloud(sharded_stacks) as cloud:
        sharded, sharded_files = _run_through(cloud, tmp_path, "run-1")
        map_events = _map_events(cloud, "run-1")
        items = _map_items(cloud, "run-1")
    # and once on the default stack, where 50 cases run whole
    with LocalCloud(stack_templates) as cloud:
        whole, whole_files = _run_through(cloud, tmp_path, "run-1")

    # Then the first was cut into 8 shards that the Distributed Map ran, the second was not
    assert sharded.shards is not None and sharded.shards.count == 8
    assert whole.shards is None
    assert map_events[-1] == "MapRunSucceeded"
    assert (items["total"], items["succeeded"], items["failed"]) == (8, 8, 0)
    # and both runs show the same results and hold byte for byte the same files
    assert sharded.status is RunStatus.COMPLETED
    assert sharded.artifact_status is ArtifactStatus.SAVED
    assert _outcome(sharded) == _outcome(whole)
    assert sharded_files == whole_files


def test_registration_records_the_split_and_writes_the_shard_files(
    sharded_cloud: LocalCloud, tmp_path: Path
) -> None:
    _register(sharded_cloud, tmp_path)
    record = EnvironmentsRepo(_table(sharded_cloud, "Environments")).get(ENVIRONMENT, "v1")
    assert record is not None
    assert [plan.model_dump() for plan in record.case_shards] == [
        {"task": 0, "cases": 50, "size": SHARD_SIZE, "count": 8}
    ]
    s3 = sharded_cloud.client("s3")
    last = s3.get_object(Bucket=sharded_cloud.bucket, Key=case_shard_key(ENVIRONMENT, "v1", 0, 7))
    lines = last["Body"].read().decode().splitlines()
    cases = (EXAMPLES / ENVIRONMENT / "bundle" / "reference" / "cases.jsonl").read_text().splitlines()
    assert lines == [line for line in cases if line.strip()][49:]


def test_a_shard_that_fails_fails_the_run_with_a_sentence_naming_it(
    sharded_cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given a registered environment one of whose shard files got a broken line
    _register(sharded_cloud, tmp_path)
    key = case_shard_key(ENVIRONMENT, "v1", 0, 2)
    s3 = sharded_cloud.client("s3")
    body = s3.get_object(Bucket=sharded_cloud.bucket, Key=key)["Body"].read()
    s3.put_object(Bucket=sharded_cloud.bucket, Key=key, Body=body + b'{"id": "broken", "question": \n')

    # When a run is submitted
    _submit(sharded_cloud, "run-broken")
    arn = sharded_cloud.state_machine_arns["ShardedScoring"]
    execution = sharded_cloud.wait_for_execution(
        sharded_execution_name("run-broken"), timeout=120, state_machine_arn=arn
    )
    sharded_cloud.settle(timeout=120)

    # Then the run failed, saying which shard and what was wrong, and the execution failed too
    run = _run(sharded_cloud, "run-broken")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert run.failure_reason.startswith("scoring shard 3 of 8 (cases 15-21): ")
    assert "line 8 is not valid JSON" in run.failure_reason
    assert execution["status"] == "FAILED"
    assert run.artifact_status is None


def test_a_duplicate_prediction_output_event_changes_nothing(
    sharded_cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given a sharded run that went all the way through
    _register(sharded_cloud, tmp_path)
    _submit(sharded_cloud, "run-dup")
    sharded_cloud.wait_for_execution(execution_name("run-dup"), timeout=120)
    sharded_cloud.settle(timeout=120)
    before = _run(sharded_cloud, "run-dup")
    files = _files(sharded_cloud, "run-dup")

    # When S3 delivers the prediction output's event again (a new delivery of the same object)
    key = before.files[RunOutput.PREDICTION_OUTPUT]
    head = sharded_cloud.client("s3").head_object(Bucket=sharded_cloud.bucket, Key=key)
    event = {
        "Records": [
            {
                "eventSource": "aws:s3",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "bucket": {"name": sharded_cloud.bucket},
                    "object": {
                        "key": key,
                        "size": head["ContentLength"],
                        "eTag": head["ETag"].strip('"'),
                        "versionId": head.get("VersionId"),
                    },
                },
            }
        ]
    }
    name = next(n for logical_id, n in sharded_cloud.functions.items() if logical_id.startswith("Score"))
    sharded_cloud.client("lambda").invoke(
        FunctionName=name, InvocationType="Event", Payload=json.dumps(event)
    )
    sharded_cloud.settle(timeout=120)

    # Then the run, its files and its one sharded execution are as they were
    assert _run(sharded_cloud, "run-dup") == before
    assert _files(sharded_cloud, "run-dup") == files
    machine = sharded_cloud.state_machine_arns["ShardedScoring"]
    assert (
        len(sharded_cloud.client("stepfunctions").list_executions(stateMachineArn=machine)["executions"]) == 1
    )
