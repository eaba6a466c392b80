"""Live runs on the providers' batch inference, on the local cloud: the InferencePipeline's batch branch
submits the jobs and polls them, the simulated providers (Bedrock's model invocation jobs on moto, the
example model server's Batch API) answer from the example models, and the output landing in S3 assembles
the submission that the existing ingest and score judge."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.tables.runs import RunsRepo
from benchgen.outputs import RunOutput
from benchgen.records.runs import InferenceMode, LiveModel, RunRecord, RunStatus
from benchgen.vocabulary import Sampling
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, ExampleModelServer, Fault

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOVA = "amazon.nova-micro-v1:0"
EXAMPLE = "arithmetic-en"  # 450 cases: enough for Bedrock's 100 records a job at least


@pytest.fixture
def fast_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # The local cloud's Wait really sleeps: one second between looks. Set before the first function starts.
    monkeypatch.setenv("MODEL_RETRY_BASE_SECONDS", "0.01")
    monkeypatch.setenv("BATCH_POLL_SECONDS", "1")
    monkeypatch.setenv("BATCH_MAX_POLLS", "12")


@pytest.fixture
def models() -> Iterator[ExampleModelServer]:
    with ExampleModelServer() as server:
        yield server


@pytest.fixture
def bedrock(cloud: LocalCloud, models: ExampleModelServer) -> LocalCloud:
    """The local cloud whose simulated Bedrock answers Nova Micro as the example base model."""
    cloud.provider_clock.bedrock_batches.serve(models, {NOVA: BASE_MODEL})
    return cloud


def _runs(cloud: LocalCloud) -> RunsRepo:
    return RunsRepo(next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs")))


def _register(cloud: LocalCloud, tmp_path: Path, example: str = EXAMPLE) -> None:
    archive = write_bundle_zip(EXAMPLES / example / "bundle", tmp_path / f"{example}.zip")
    key = f"environments/{example}/v1/bundle.zip"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive.read_bytes())
    cloud.settle()


def _bedrock_model(region: str, mode: InferenceMode = InferenceMode.BATCH) -> LiveModel:
    return LiveModel(
        connection_id="conn-bedrock",
        provider="bedrock",
        model_id=NOVA,
        region=region,
        sampling=Sampling(temperature=0, max_tokens=256),
        inference_mode=mode,
    )


def _live_run(cloud: LocalCloud, run_id: str, live: LiveModel, example: str = EXAMPLE) -> dict[str, Any]:
    run = RunRecord(
        run_id=run_id,
        environment_id=example,
        environment_version="v1",
        model=live.model_id,
        owner="alice",
        live_model=live,
    )
    assert _runs(cloud).create(run)
    machine = cloud.state_machine_arns["InferencePipeline"]
    cloud.client("stepfunctions").start_execution(
        stateMachineArn=machine, name=f"live-{run_id}", input=json.dumps({"run_id": run_id})
    )
    execution = cloud.wait_for_execution(f"live-{run_id}", timeout=180, state_machine_arn=machine)
    cloud.settle()
    return execution


def _object(cloud: LocalCloud, key: str) -> bytes:
    body: bytes = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read()
    return body


def _lines(cloud: LocalCloud, key: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _object(cloud, key).decode().splitlines() if line.strip()]


def _example_predictions(example: str = EXAMPLE) -> dict[str, str]:
    submitted = json.loads((EXAMPLES / example / "submission" / "predictions.json").read_text())
    return {entry["id"]: entry["prediction_text"] for entry in submitted["predictions"]}


def _generated_predictions(cloud: LocalCloud, run: RunRecord) -> dict[str, str]:
    assert run.submission_key is not None
    generated = json.loads(_object(cloud, run.submission_key))
    return {entry["id"]: entry["prediction_text"] for entry in generated["predictions"]}


def test_a_bedrock_batch_run_completes_scored_on_the_answers_of_its_model_invocation_job(
    fast_batches: None, bedrock: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the 450-case arithmetic example, and simulated Bedrock answering Nova Micro as example-base
    _register(bedrock, tmp_path)

    # When a live run asks Nova Micro every case through Bedrock batch inference
    execution = _live_run(bedrock, "batch-bedrock", _bedrock_model(bedrock.region))

    # Then the execution ended once the job had, and the run completed, scored on the job's answers: the
    # answers example-base gives, which are the example submission's
    assert execution["status"] == "SUCCEEDED"
    run = _runs(bedrock).get("batch-bedrock")
    assert run is not None
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.overall_score is not None
    assert _generated_predictions(bedrock, run) == _example_predictions()
    # and one job carried the run, recorded with Bedrock's id, status and counts
    assert run.batch is not None
    (job,) = run.batch.jobs
    assert job.job_id is not None and job.job_id.startswith("arn:aws:bedrock:")
    assert (job.status, job.records, job.succeeded, job.failed) == ("Completed", 450, 450, 0)
    # sent as Bedrock takes it: the records in S3, Converse input, the stack's batch role
    (request,) = bedrock.provider_clock.bedrock_batches.requests
    assert request["modelInvocationType"] == "Converse"
    assert request["roleArn"].startswith("arn:aws:iam::") and "BedrockBatchRole" in request["roleArn"]
    assert request["inputDataConfig"]["s3InputDataConfig"]["s3Uri"].startswith(f"s3://{bedrock.bucket}/runs/")
    # and each case's answer, raw output and tokens are in the inference log, as on demand
    log = _lines(bedrock, run.files[RunOutput.INFERENCE_LOG])
    assert len(log) == 450 and all(entry["answered"] for entry in log)
    assert all(isinstance(entry["input_tokens"], int) for entry in log)
    assert all(isinstance(entry["output_tokens"], int) for entry in log)
    assert sum(entry["input_tokens"] for entry in log) > 450
    raw = json.loads(log[0]["raw"])
    assert raw["output"]["message"]["content"][0]["text"] == log[0]["prediction_text"]
    assert run.inference is not None
    assert (run.inference.cases, run.inference.answered, run.inference.unanswered) == (450, 450, 0)
    # and no case was asked on demand: the only chat completions were the job's 450 and the deploy check
    assert len(models.faults.requests) == 451
