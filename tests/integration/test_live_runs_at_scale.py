"""Live runs at the model's speed and at AWS's limits, on the local cloud (whose Step Functions enforce
the history, payload and Map concurrency quotas, see localcloud/step_limits.py): a run of 100,000 cases
asks every case, writes its submission and is scored from it, and a server that refuses requests beyond
its capacity slows a run down without losing a case.

The cases are gsm8k-en's 40 questions asked again and again under new ids, so that the example server
answers each as it answers the example (its score stays 0.7 only if every case got its own answer)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.tables.runs import RunsRepo
from benchgen.outputs import RunOutput
from benchgen.records.runs import InferenceLimits, LiveModel, RunRecord, RunStatus
from benchgen.vocabulary import InferenceMode, Sampling
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, ExampleModelServer
from localcloud.providers.bedrock_batch import jobs_of
from localcloud.step_limits import HISTORY_LIMIT
from tests.bench_scripts import bench_script
from tests.stacks import resource

# gsm8k-en's bundle with as many cases as asked, as the live-inference bench makes it
live_inference_bench = bench_script("live_inference_bench")

SCALE_CASES = 100_000
NOVA = "amazon.nova-micro-v1:0"
# `cdk deploy -c benchgen:inferenceShardSize=500`: the context sets the plan function's variable only.
SCALE_SHARD_SIZE = 500


def _with_shard_size(stacks: dict[str, dict[str, Any]], size: int) -> dict[str, dict[str, Any]]:
    changed = copy.deepcopy(stacks)
    variables = resource(changed, "PlanInferenceFunction")["Properties"]["Environment"]["Variables"]
    variables["INFERENCE_SHARD_SIZE"] = str(size)
    return changed


@pytest.fixture
def scale_cloud(
    stack_templates: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalCloud]:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "WARNING")
    with LocalCloud(_with_shard_size(stack_templates, SCALE_SHARD_SIZE)) as started:
        yield started


def _runs(cloud: LocalCloud) -> RunsRepo:
    return RunsRepo(next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs")))


def _register(cloud: LocalCloud, environment: str, cases: int) -> None:
    key = f"environments/{environment}/v1/bundle.zip"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=live_inference_bench.bundle(cases))
    cloud.settle(timeout=600)


def _live_run(
    cloud: LocalCloud, run_id: str, environment: str, base_url: str, limits: InferenceLimits, timeout: float
) -> dict[str, Any]:
    live = LiveModel(
        connection_id="conn-local",
        provider="openai-compatible",
        model_id=BASE_MODEL,
        sampling=Sampling(temperature=0, max_tokens=256),
        base_url=base_url,
        limits=limits,
        # Asked case by case: auto would send a run this size to the provider's batch inference.
        inference_mode=InferenceMode.ON_DEMAND,
    )
    run = RunRecord(
        run_id=run_id,
        environment_id=environment,
        environment_version="v1",
        model=BASE_MODEL,
        owner="alice",
        live_model=live,
    )
    assert _runs(cloud).create(run)
    machine = cloud.state_machine_arns["InferencePipeline"]
    cloud.client("stepfunctions").start_execution(
        stateMachineArn=machine, name=f"live-{run_id}", input=json.dumps({"run_id": run_id})
    )
    execution = cloud.wait_for_execution(f"live-{run_id}", timeout=timeout, state_machine_arn=machine)
    cloud.settle(timeout=timeout)
    return execution


def _history_length(cloud: LocalCloud, execution_arn: str) -> int:
    pages = cloud.client("stepfunctions").get_paginator("get_execution_history")
    return sum(len(page["events"]) for page in pages.paginate(executionArn=execution_arn, maxResults=1000))


def _log(cloud: LocalCloud, key: str) -> list[dict[str, Any]]:
    body = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read().decode()
    return [json.loads(line) for line in body.splitlines() if line.strip()]


@pytest.mark.slow
def test_a_live_run_of_100000_cases_is_answered_on_the_local_cloud_within_aws_limits(
    scale_cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given an environment of 100,000 cases and the example server answering at once
    _register(scale_cloud, "scale", SCALE_CASES)
    with ExampleModelServer() as models:
        # When a live run asks it every case, 64 requests at a time
        execution = _live_run(
            scale_cloud, "live-scale", "scale", models.base_url, InferenceLimits(max_in_flight=64), 1800
        )

    # Then the execution succeeded, its history far from the limit (the shards' executions have their own)
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    assert _history_length(scale_cloud, execution["executionArn"]) < HISTORY_LIMIT // 100
    # and every case was asked once (and the model reached once more), never more than 64 at a time
    assert models.capacity.served == SCALE_CASES + 1
    assert models.capacity.most_in_flight <= 64
    # and the generated submission holds every case's own answer, in the cases' order
    run = _runs(scale_cloud).get("live-scale")
    assert run is not None
    assert run.inference is not None
    assert (run.inference.cases, run.inference.answered, run.inference.unanswered) == (
        SCALE_CASES,
        SCALE_CASES,
        0,
    )
    submission = scale_cloud.client("s3").get_object(Bucket=scale_cloud.bucket, Key=run.submission_key)
    predictions = json.loads(submission["Body"].read())["predictions"]
    assert [p["id"] for p in predictions] == [f"case-{number:06d}" for number in range(SCALE_CASES)]
    # and the run was scored from it (a submission this size is uploaded in parts, announced once) as the
    # example scores gsm8k-en's answers, every case answered as its original was
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.overall_score == pytest.approx(0.7)


def test_a_server_at_capacity_slows_the_run_down_and_no_case_is_lost(
    cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an environment of 120 cases and a server with 4 slots that refuses (429) whatever comes beyond
    _register(cloud, "busy", 120)
    with ExampleModelServer(latency_s=0.02, slots=4) as models:
        # When a live run asks it with 16 requests in flight, 4 times what it serves
        execution = _live_run(
            cloud, "live-busy", "busy", models.base_url, InferenceLimits(max_in_flight=16), 300
        )

    # Then the server refused requests, and the run slowed down rather than failing: every case answered
    assert models.capacity.refused > 0
    assert models.capacity.most_in_flight <= 4
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    run = _runs(cloud).get("live-busy")
    assert run is not None
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.overall_score == pytest.approx(0.7)
    assert run.inference is not None
    assert (run.inference.answered, run.inference.unanswered) == (120, 0)
    # and each case kept its answer, its latency, its tokens and the attempts it took
    log = _log(cloud, run.files[RunOutput.INFERENCE_LOG])
    assert len(log) == 120
    assert {entry["id"] for entry in log} == {f"case-{number:06d}" for number in range(120)}
    assert all(entry["answered"] and entry["raw"] and entry["latency_ms"] >= 0 for entry in log)
    # (the server counts words: a question has some, an answer may have none)
    assert all(entry["input_tokens"] > 0 and entry["output_tokens"] >= 0 for entry in log)
    assert sum(entry["attempts"] for entry in log) == 120 + models.capacity.refused
    assert max(entry["attempts"] for entry in log) > 1


@pytest.mark.slow
def test_a_batch_run_of_100000_cases_goes_as_two_bedrock_jobs_of_50000_and_is_scored(
    scale_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an environment of 100,000 cases, and simulated Bedrock answering Nova Micro as example-base
    monkeypatch.setenv("BATCH_POLL_SECONDS", "1")
    _register(scale_cloud, "scale", SCALE_CASES)
    with ExampleModelServer() as models:
        jobs_of(scale_cloud.provider_clock).serve(models.completion, {NOVA: BASE_MODEL})
        live = LiveModel(
            connection_id="conn-bedrock",
            provider="bedrock",
            model_id=NOVA,
            region=scale_cloud.region,
            sampling=Sampling(temperature=0, max_tokens=256),
            inference_mode=InferenceMode.BATCH,
        )
        run = RunRecord(
            run_id="batch-scale", environment_id="scale", environment_version="v1", model=NOVA, owner="alice"
        )
        assert _runs(scale_cloud).create(run.model_copy(update={"live_model": live}))
        machine = scale_cloud.state_machine_arns["InferencePipeline"]
        scale_cloud.client("stepfunctions").start_execution(
            stateMachineArn=machine, name="live-batch-scale", input=json.dumps({"run_id": "batch-scale"})
        )
        execution = scale_cloud.wait_for_execution(
            "live-batch-scale", timeout=1800, state_machine_arn=machine
        )
        scale_cloud.settle(timeout=1800)

    # Then two jobs of Bedrock's most records carried it, every case answered in order, and it was scored
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    done = _runs(scale_cloud).get("batch-scale")
    assert done is not None and done.batch is not None
    assert [(job.first_record, job.records, job.status) for job in done.batch.jobs] == [
        (0, 50_000, "Completed"),
        (50_000, 50_000, "Completed"),
    ]
    assert done.inference is not None and done.inference.answered == SCALE_CASES
    submission = scale_cloud.client("s3").get_object(Bucket=scale_cloud.bucket, Key=done.submission_key)
    predictions = json.loads(submission["Body"].read())["predictions"]
    assert [p["id"] for p in predictions] == [f"case-{number:06d}" for number in range(SCALE_CASES)]
    assert done.status is RunStatus.COMPLETED, done.failure_reason
    assert done.overall_score == pytest.approx(0.7)
