"""Live runs on the providers' batch inference, on the local cloud: the InferencePipeline's batch branch
submits the jobs and polls them, the simulated providers (Bedrock's model invocation jobs on moto, the
example model server's Batch API) answer from the example models, and the output landing in S3 assembles
the submission that the existing ingest and score judge."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.tables.runs import RunsRepo
from benchgen.outputs import RunOutput
from benchgen.records.prices import ModelPrices, TokenPrices
from benchgen.records.runs import LiveModel, RunRecord, RunStatus
from benchgen.steps import batch_inference
from benchgen.vocabulary import InferenceMode, Sampling
from cli.api_client import Api
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, ExampleModelServer, Fault
from localcloud.providers.bedrock_batch import jobs_of

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
def bedrock(cloud: LocalCloud, models: ExampleModelServer) -> LocalCloud:
    """The local cloud whose simulated Bedrock answers Nova Micro as the example base model."""
    jobs_of(cloud.provider_clock).serve(models.completion, {NOVA: BASE_MODEL})
    return cloud


def _runs(cloud: LocalCloud) -> RunsRepo:
    return RunsRepo(next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs")))


def _register(cloud: LocalCloud, tmp_path: Path, example: str = EXAMPLE) -> None:
    archive = write_bundle_zip(EXAMPLES / example / "bundle", tmp_path / f"{example}.zip")
    key = f"environments/{example}/v1/bundle.zip"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive.read_bytes())
    cloud.settle()


# Nova Micro's published prices, per million tokens: batch is half of on demand.
NOVA_PRICES = ModelPrices(
    on_demand=TokenPrices(input_per_million=0.035, output_per_million=0.14),
    batch=TokenPrices(input_per_million=0.0175, output_per_million=0.07),
)


def _bedrock_model(region: str, mode: InferenceMode = InferenceMode.BATCH) -> LiveModel:
    return LiveModel(
        connection_id="conn-bedrock",
        provider="bedrock",
        model_id=NOVA,
        region=region,
        sampling=Sampling(temperature=0, max_tokens=256),
        inference_mode=mode,
        prices=NOVA_PRICES,
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


def _failed_run(cloud: LocalCloud, run_id: str, live: LiveModel, example: str = EXAMPLE) -> RunRecord:
    """The run ``run_id`` of ``live`` after its execution, which failed it: the run, Failed with a reason."""
    execution = _live_run(cloud, run_id, live, example=example)
    assert execution["status"] == "FAILED"
    run = _runs(cloud).get(run_id)
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    return run


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
    (request,) = jobs_of(bedrock.provider_clock).requests
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
    # and its tokens are the log's, priced at the connection's batch prices
    tokens = (sum(entry["input_tokens"] for entry in log), sum(entry["output_tokens"] for entry in log))
    assert (run.inference.input_tokens, run.inference.output_tokens) == tokens
    assert run.inference.cost is not None and run.inference.cost.mode is InferenceMode.BATCH
    assert run.inference.cost.total == pytest.approx((tokens[0] * 0.0175 + tokens[1] * 0.07) / 1e6)
    # and no case was asked on demand: the only chat completions were the job's 450 and the deploy check
    assert len(models.faults.requests) == 451


def _openai_model(base_url: str, mode: InferenceMode = InferenceMode.BATCH, above: int = 10_000) -> LiveModel:
    return LiveModel(
        connection_id="conn-local",
        provider="openai-compatible",
        model_id=BASE_MODEL,
        base_url=base_url,
        sampling=Sampling(temperature=0, max_tokens=256),
        inference_mode=mode,
        batch_above_cases=above,
    )


def test_an_openai_batch_run_completes_and_its_output_files_are_copied_into_the_runs_prefix(
    fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the gsm8k-en example (40 cases) and the example server's Batch API
    _register(cloud, tmp_path, "gsm8k-en")

    # When a live run sends its cases to the Batch API
    execution = _live_run(cloud, "batch-openai", _openai_model(models.base_url), example="gsm8k-en")

    # Then the run completed on the batch's answers: the example submission's, scored as on demand (0.7)
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get("batch-openai")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    assert run.overall_score == pytest.approx(0.7)
    assert _generated_predictions(cloud, run) == _example_predictions("gsm8k-en")
    # one batch of 40 requests, created as the Batch API documents it
    (body,) = models.batches.bodies
    assert (body["endpoint"], body["completion_window"]) == ("/v1/chat/completions", "24h")
    assert run.batch is not None
    (job,) = run.batch.jobs
    assert (job.job_id, job.status, job.records, job.succeeded, job.failed) == (
        "batch_000001",
        "completed",
        40,
        40,
        0,
    )
    # and its output, which the provider keeps, was copied into the job's output folder, manifest last
    folder = f"batch-output/batch-openai/{job.name}/batch_000001/"
    listed = cloud.client("s3").list_objects_v2(Bucket=cloud.bucket, Prefix=folder)
    assert sorted(item["Key"] for item in listed["Contents"]) == [
        folder + "manifest.json.out",
        folder + "output.jsonl.out",
    ]
    # the only chat completions asked on demand: the deploy check; the batch's 40 came through the batch
    assert len(models.faults.requests) == 41


def test_records_the_provider_failed_are_unanswered_cases_with_the_providers_reason(
    fast_batches: None, bedrock: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given simulated Bedrock whose model refuses two cases of the arithmetic example, every time
    _register(bedrock, tmp_path)
    first, second = sorted(_example_predictions())[3], sorted(_example_predictions())[7]
    for case_id in (first, second):
        models.faults.add(Fault(status=400, case_id=case_id, times=None))

    # When a batch run goes through
    execution = _live_run(bedrock, "batch-partial", _bedrock_model(bedrock.region))

    # Then the job ended partially completed, and the run completed with those two cases unanswered
    assert execution["status"] == "SUCCEEDED"
    run = _runs(bedrock).get("batch-partial")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    assert run.batch is not None
    (job,) = run.batch.jobs
    assert (job.status, job.succeeded, job.failed) == ("PartiallyCompleted", 448, 2)
    assert run.inference is not None
    assert (run.inference.answered, run.inference.unanswered) == (448, 2)
    reason = "Bedrock batch inference: injected fault 400 (error code 400)"
    # the records' errors, the first few, where on-demand runs keep theirs (GET /runs/{id} shows them)
    assert sorted(run.inference.unanswered_reasons) == [f"{first}: {reason}", f"{second}: {reason}"]
    # each answered empty in the submission, and logged with the provider's reason
    log = {entry["id"]: entry for entry in _lines(bedrock, run.files[RunOutput.INFERENCE_LOG])}
    assert (log[first]["answered"], log[first]["prediction_text"], log[first]["error"]) == (False, "", reason)
    assert _generated_predictions(bedrock, run)[second] == ""


def test_a_run_above_the_record_limit_is_split_into_jobs_each_within_it(
    fast_batches: None,
    bedrock: LocalCloud,
    models: ExampleModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an account whose quota is 200 records a job, which simulated Bedrock enforces too
    monkeypatch.setenv("BATCH_MAX_RECORDS", "200")
    jobs_of(bedrock.provider_clock).max_records = 200
    _register(bedrock, tmp_path)

    # When a batch run of the 450 cases goes through
    execution = _live_run(bedrock, "batch-split", _bedrock_model(bedrock.region))

    # Then it went as three jobs of 150 records, in the cases' order, each completed
    assert execution["status"] == "SUCCEEDED"
    run = _runs(bedrock).get("batch-split")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    assert run.batch is not None
    assert [(job.first_record, job.records, job.status) for job in run.batch.jobs] == [
        (0, 150, "Completed"),
        (150, 150, "Completed"),
        (300, 150, "Completed"),
    ]
    assert len({job.job_id for job in run.batch.jobs}) == 3
    # and the three jobs' answers make the one submission, in order
    assert _generated_predictions(bedrock, run) == _example_predictions()
    assert run.inference is not None and run.inference.answered == 450


def test_a_duplicate_output_event_changes_nothing(
    fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a batch run that completed
    _register(cloud, tmp_path, "gsm8k-en")
    _live_run(cloud, "batch-duplicate", _openai_model(models.base_url), example="gsm8k-en")
    before = _runs(cloud).get("batch-duplicate")
    assert before is not None and before.status is RunStatus.COMPLETED and before.batch is not None
    job = before.batch.jobs[0]
    manifest = f"batch-output/batch-duplicate/{job.name}/{job.job_id}/manifest.json.out"
    s3 = cloud.client("s3")
    body = s3.get_object(Bucket=cloud.bucket, Key=manifest)["Body"].read()

    # When its manifest's event is delivered again, and the manifest lands a second time
    name = next(name for lid, name in cloud.functions.items() if lid.startswith("AssembleBatch"))
    head = s3.head_object(Bucket=cloud.bucket, Key=manifest)
    event = _notification(cloud, manifest, head)
    cloud.client("lambda").invoke(FunctionName=name, InvocationType="Event", Payload=json.dumps(event))
    s3.put_object(Bucket=cloud.bucket, Key=manifest, Body=body)
    cloud.settle()

    # Then the run is as it was, and its submission was uploaded once
    after = _runs(cloud).get("batch-duplicate")
    assert after is not None
    assert after.model_dump(exclude={"claim"}) == before.model_dump(exclude={"claim"})
    versions = s3.list_object_versions(Bucket=cloud.bucket, Prefix="submissions/batch-duplicate/")
    assert len(versions["Versions"]) == 1


def _notification(cloud: LocalCloud, key: str, head: dict[str, Any]) -> dict[str, Any]:
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": cloud.region,
                "eventTime": "2026-11-30T05:00:00.000Z",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "bucket": {"name": cloud.bucket, "arn": f"arn:aws:s3:::{cloud.bucket}"},
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


def test_an_explicit_batch_run_below_the_providers_minimum_fails_saying_what_to_do(
    fast_batches: None, bedrock: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the 40-case gsm8k-en example: fewer than the 100 records a Bedrock batch job needs
    _register(bedrock, tmp_path, "gsm8k-en")

    # When a run asks explicitly for batch inference
    execution = _live_run(bedrock, "batch-small", _bedrock_model(bedrock.region), example="gsm8k-en")

    # Then it fails before anything is submitted, with the sentence
    assert execution["status"] == "FAILED"
    run = _runs(bedrock).get("batch-small")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason == (
        "this run asks 40 cases, and Bedrock batch inference needs at least 100 records in a job: set "
        "inference_mode to on_demand (or auto, which asks a run this small on demand)"
    )
    assert jobs_of(bedrock.provider_clock).requests == []


@pytest.mark.parametrize(("above", "batched"), [(39, True), (40, False)])
def test_auto_sends_a_run_to_batch_only_above_its_size(
    fast_batches: None,
    cloud: LocalCloud,
    models: ExampleModelServer,
    tmp_path: Path,
    above: int,
    batched: bool,
) -> None:
    # Given the 40-case example and a run in auto mode going to batch above `above` cases
    _register(cloud, tmp_path, "gsm8k-en")
    live = _openai_model(models.base_url, InferenceMode.AUTO, above=above)

    # When the run goes through
    execution = _live_run(cloud, f"batch-auto-{above}", live, example="gsm8k-en")

    # Then it went to the Batch API only when it had more cases than that, and completed either way
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get(f"batch-auto-{above}")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    assert (run.batch is not None) is batched
    assert len(models.batches.bodies) == (1 if batched else 0)
    assert run.overall_score == pytest.approx(0.7)


def test_a_failed_job_fails_the_run_with_the_providers_message(
    fast_batches: None, bedrock: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given simulated Bedrock failing every job
    _register(bedrock, tmp_path)
    jobs_of(bedrock.provider_clock).fail("the model is not available for batch inference here")

    # When a batch run goes through
    execution = _live_run(bedrock, "batch-failed", _bedrock_model(bedrock.region))

    # Then it fails with the job's status and Bedrock's own words, and nothing was submitted for ingest
    assert execution["status"] == "FAILED"
    run = _runs(bedrock).get("batch-failed")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert "ended Failed at Bedrock batch inference: the model is not available" in run.failure_reason
    listed = bedrock.client("s3").list_objects_v2(Bucket=bedrock.bucket, Prefix="submissions/batch-failed/")
    assert listed.get("KeyCount", 0) == 0


def test_a_bedrock_job_that_completed_with_no_output_fails_the_run_at_once(
    fast_batches: None, bedrock: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given simulated Bedrock ending every job Completed without writing any output
    _register(bedrock, tmp_path)
    jobs_of(bedrock.provider_clock).end_empty()

    # When a batch run goes through
    run = _failed_run(bedrock, "batch-bedrock-empty", _bedrock_model(bedrock.region))

    # Then the run failed on the look that saw the job end, saying it left no output, as the Batch API's
    assert run.failure_reason is not None
    assert (
        "ended Completed at Bedrock batch inference with no output in its output folder (no "
        "manifest.json.out): none of its 450 records was answered"
    ) in run.failure_reason
    # the fourth look: Validating, Scheduled, InProgress, then Completed
    assert run.batch is not None and run.batch.polls == 4


def test_jobs_that_never_end_fail_the_run_after_the_last_look_each_announced_on_the_run(
    fast_batches: None,
    bedrock: LocalCloud,
    models: ExampleModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given jobs that stay in progress, a run that looks three times, and the run's record read as it goes
    monkeypatch.setenv("BATCH_MAX_POLLS", "3")
    _register(bedrock, tmp_path)
    jobs_of(bedrock.provider_clock).hold()
    seen: list[tuple[datetime, int, str | None]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            run = _runs(bedrock).get("batch-held")
            if run is not None and run.batch is not None:
                seen.append((datetime.now(UTC), run.batch.polls, run.batch.next_poll_at))
            stop.wait(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        # When a batch run goes through
        run = _failed_run(bedrock, "batch-held", _bedrock_model(bedrock.region))
    finally:
        stop.set()
        watcher.join()

    # Then it fails saying it stopped waiting, and the run records how many looks it took
    assert run.failure_reason is not None
    assert run.failure_reason.startswith("the run's batch jobs had not all ended after 3 looks")
    # and before each look the run said when it would come, a whole second (as a Step Functions Wait
    # reads it) at least the wait ahead
    announced = {polls: at for _, polls, at in seen if at is not None}
    assert sorted(announced) == [0, 1, 2], seen
    for at in announced.values():
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", at), at
    # and each look came no earlier than announced
    for polls, at in announced.items():
        looked = min(when for when, count, _ in seen if count > polls)
        assert looked >= datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC), (polls, at, seen)
    # and once the run stopped looking, no next look is announced
    assert run.batch is not None and (run.batch.polls, run.batch.next_poll_at) == (3, None)


# ---- through the API -------------------------------------------------------------------------------------


@pytest.fixture
def api(cloud: LocalCloud) -> Iterator[Api]:
    with cloud.serve_api(access_log=False) as server:
        yield Api(server.url, cloud.create_user("owner@example.com", "Owner-Passw0rd!x"))


def _post_run(api: Api, connection_id: str, **config: Any) -> tuple[int, Any]:
    body = {
        "environment_id": EXAMPLE,
        "version": "v1",
        "model": "tuned",
        "model_config": {"connection_id": connection_id, "model_id": "tuned-llama", **config},
    }
    return api.call("POST", "/runs", body)


def test_post_runs_refuses_batch_for_a_sagemaker_endpoint_saying_what_would_serve(
    cloud: LocalCloud, tmp_path: Path, api: Api
) -> None:
    # Given the owner's SageMaker endpoint connection
    _register(cloud, tmp_path)
    connection = api.expect(
        "POST",
        "/connections",
        201,
        {
            "name": "endpoint",
            "provider": "sagemaker",
            "region": cloud.region,
            "endpoint_name": "tuned-llama-endpoint",
        },
    )

    # When a run asks for batch inference through it, or for a mode that does not exist
    status, answer = _post_run(api, connection["connection_id"], inference_mode="batch")
    unknown_status, unknown = _post_run(api, connection["connection_id"], inference_mode="overnight")

    # Then both are refused, the first with the sentence naming what would serve, and no run was recorded
    assert status == 400, answer
    assert answer["message"] == (
        "inference_mode batch: a SageMaker endpoint has no batch inference API for live runs: set "
        "inference_mode to on_demand (its cases are asked concurrently, up to limits.max_in_flight), or "
        "serve the model on Bedrock or an OpenAI-compatible host with a Batch API for batch runs"
    )
    assert unknown_status == 422
    assert "inference_mode" in json.dumps(unknown)
    assert api.expect("GET", "/runs", 200)["items"] == []


def test_post_runs_keeps_the_inference_mode_and_get_runs_shows_the_batch_jobs(
    fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path, api: Api
) -> None:
    # Given the owner's connection to the example server's Batch API
    _register(cloud, tmp_path, "gsm8k-en")
    connection = api.expect(
        "POST",
        "/connections",
        201,
        {"name": "example models", "provider": "openai-compatible", "base_url": models.base_url},
    )

    # When the owner creates a run in auto mode going to batch above 10 cases
    body = {
        "environment_id": "gsm8k-en",
        "version": "v1",
        "model": "example-base",
        "model_config": {
            "connection_id": connection["connection_id"],
            "model_id": BASE_MODEL,
            "inference_mode": "auto",
            "batch_above_cases": 10,
        },
    }
    status, created = api.call("POST", "/runs", body)
    assert status == 201, created
    run_id = created["run"]["run_id"]
    machine = cloud.state_machine_arns["InferencePipeline"]
    execution = cloud.wait_for_execution(f"live-{run_id}", timeout=180, state_machine_arn=machine)
    cloud.settle()

    # Then the run went to batch, and its page shows the job, its provider id, status and counts
    assert execution["status"] == "SUCCEEDED"
    detail = api.expect("GET", f"/runs/{run_id}", 200)
    assert detail["status"] == "Completed"
    assert detail["batch"]["polls"] >= 1
    (job,) = detail["batch"]["jobs"]
    assert {key: job[key] for key in ("job_id", "status", "records", "succeeded", "failed")} == {
        "job_id": "batch_000001",
        "status": "completed",
        "records": 40,
        "succeeded": 40,
        "failed": 0,
    }
    assert detail["inference"]["answered"] == 40


# ---- the simulated Bedrock jobs are stricter than Bedrock ----------------------------------------------


def _submit_job(cloud: LocalCloud, name: str, records: list[Any], token: str | None = None) -> str:
    key = f"runs/fake/batch/{name}/records.jsonl"
    body = "".join(json.dumps(record) + "\n" for record in records)
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=body.encode())
    request: dict[str, Any] = {
        "jobName": name,
        "roleArn": "arn:aws:iam::123456789012:role/batch",
        "modelId": NOVA,
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{cloud.bucket}/{key}"}},
        "outputDataConfig": {
            "s3OutputDataConfig": {"s3Uri": f"s3://{cloud.bucket}/batch-output/fake/{name}/"}
        },
        "modelInvocationType": "Converse",
    }
    if token is not None:
        request["clientRequestToken"] = token
    return str(cloud.client("bedrock").create_model_invocation_job(**request)["jobArn"])


def _read_until_ended(cloud: LocalCloud, arn: str) -> dict[str, Any]:
    for _ in range(8):
        job: dict[str, Any] = cloud.client("bedrock").get_model_invocation_job(jobIdentifier=arn)
        if job["status"] not in ("Submitted", "Validating", "Scheduled", "InProgress"):
            return job
    raise AssertionError("the simulated job never ended")


def _record(index: int, **extra: Any) -> dict[str, Any]:
    converse = {"messages": [{"role": "user", "content": [{"text": f"What is {index} + 1?"}]}]}
    return {"recordId": f"R{index:010d}", "modelInput": converse, **extra}


def test_the_simulated_job_fails_a_record_of_the_wrong_shape_at_its_line_and_a_job_below_the_minimum(
    bedrock: LocalCloud,
) -> None:
    jobs = jobs_of(bedrock.provider_clock)
    jobs.min_records = 3
    shaped = [_record(0), _record(1, modelOutput={}), _record(2)]
    named = [_record(0), {**_record(1), "recordId": "case-1"}, _record(2)]

    misshaped = _read_until_ended(bedrock, _submit_job(bedrock, "misshaped", shaped))
    misnamed = _read_until_ended(bedrock, _submit_job(bedrock, "misnamed", named))
    small = _read_until_ended(bedrock, _submit_job(bedrock, "small", [_record(0), _record(1)]))

    assert misshaped["status"] == "Failed"
    assert misshaped["message"] == (
        "line 2 of the input: a record is exactly {recordId, modelInput}, this one has "
        "['modelInput', 'modelOutput', 'recordId']"
    )
    assert (
        misnamed["message"]
        == "line 2 of the input: recordId 'case-1' is not an 11-character alphanumeric string"
    )
    assert small["message"] == "the job has 2 records; a job takes between 3 and 50000"


def test_the_simulated_job_is_one_per_name_and_token_and_writes_its_output_and_manifest_last(
    bedrock: LocalCloud,
) -> None:
    jobs_of(bedrock.provider_clock).min_records = 1
    arn = _submit_job(bedrock, "once", [_record(0)], token="once")

    again = _submit_job(bedrock, "once", [_record(0)], token="once")
    with pytest.raises(bedrock.client("bedrock").exceptions.ConflictException):
        _submit_job(bedrock, "once", [_record(0)], token="another")
    ended = _read_until_ended(bedrock, arn)

    assert again == arn
    assert (ended["status"], ended["successRecordCount"], ended["errorRecordCount"]) == ("Completed", 1, 0)
    folder = f"batch-output/fake/once/{arn.rsplit('/', 1)[1]}/"
    listed = bedrock.client("s3").list_objects_v2(Bucket=bedrock.bucket, Prefix=folder)["Contents"]
    assert [item["Key"] for item in listed] == [folder + "manifest.json.out", folder + "records.jsonl.out"]
    (line,) = _lines(bedrock, folder + "records.jsonl.out")
    assert line["recordId"] == "R0000000000" and "modelOutput" in line


def test_an_assembly_that_keeps_failing_fails_the_run_on_its_last_delivery(
    fast_batches: None,
    cloud: LocalCloud,
    models: ExampleModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given an assembly step that breaks on every delivery (the state machine has ended by then)
    _register(cloud, tmp_path, "gsm8k-en")
    deliveries: list[str] = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        deliveries.append("assembly")
        raise RuntimeError("disk full")

    monkeypatch.setattr(batch_inference, "_results", broken)

    # When a batch run's output lands
    execution = _live_run(cloud, "batch-broken", _openai_model(models.base_url), example="gsm8k-en")

    # Then Lambda delivered the manifest's event three times, and the last failed the run with a sentence
    assert execution["status"] == "SUCCEEDED"
    assert len(deliveries) == 3
    run = _runs(cloud).get("batch-broken")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert run.failure_reason.startswith(
        "internal error while assembling the answers of the run's batch jobs (RuntimeError, attempt 3 of 3"
    )


# ---- a hostile Batch API ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "problem"),
    [
        ({"completed": 10**42, "failed": 0}, "completed <a number of more than 20 digits>, outside 0 to the"),
        ({"completed": -(10**42), "failed": 0}, "completed -<a number of more than 20 digits>, outside 0"),
        ({"completed": 40, "failed": "none"}, "failed 'none', which is not a whole number"),
    ],
)
def test_a_batch_counting_what_cannot_be_fails_the_run_naming_the_provider_the_field_and_the_value(
    fast_batches: None,
    cloud: LocalCloud,
    models: ExampleModelServer,
    tmp_path: Path,
    counts: dict[str, Any],
    problem: str,
) -> None:
    # Given a Batch API whose ended batches count their requests as `counts`
    _register(cloud, tmp_path, "gsm8k-en")
    models.batches.answer_ended({"request_counts": {"total": 40, **counts}})

    # When a batch run goes through
    execution = _live_run(cloud, "batch-counts", _openai_model(models.base_url), example="gsm8k-en")

    # Then the run failed, its reason naming the provider, the field and what is wrong with the value
    assert execution["status"] == "FAILED"
    run = _runs(cloud).get("batch-counts")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert f"the OpenAI-compatible Batch API answered request_counts.{problem}" in run.failure_reason
    assert "create the run again" in run.failure_reason


def test_a_batch_that_completed_with_no_output_file_fails_the_run_at_once(
    fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a Batch API whose batches end completed naming neither an output file nor an error file
    _register(cloud, tmp_path, "gsm8k-en")
    models.batches.answer_ended({"output_file_id": None, "error_file_id": None})

    # When a batch run goes through
    execution = _live_run(cloud, "batch-empty", _openai_model(models.base_url), example="gsm8k-en")

    # Then the run failed on the look that saw it end, saying the batch answered nothing
    assert execution["status"] == "FAILED"
    run = _runs(cloud).get("batch-empty")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert (
        "ended completed at the OpenAI-compatible Batch API with neither an output file nor an error file: "
        "none of its 40 records was answered"
    ) in run.failure_reason
    assert run.batch is not None and run.batch.polls == models.batches.polls_to_complete


def _hostile_output(data: bytes) -> bytes:
    """The batch's output lines, spoilt one way each for its first eight cases, with a stray line more."""
    lines = {json.loads(line)["custom_id"]: line for line in data.decode().splitlines()}
    spoilt = {
        "R0000000000": lines["R0000000000"].replace('"R0000000000"', '"R0000000000", "note": "\udcff"'),
        "R0000000001": lines["R0000000001"][:-1],
        "R0000000002": "[" + lines["R0000000002"] + "]",
        "R0000000003": json.dumps({"custom_id": "R0000000003", "response": {"status_code": 200, "body": []}}),
        "R0000000004": lines["R0000000004"] + "\n" + lines["R0000000005"].replace("00005", "00004"),
        "R0000000005": '{"custom_id": "R0000000005", "pad": "' + "x" * (9 * 1024 * 1024) + '"}',
        "R0000000006": "\x00\x01 not a record",
        "R0000000007": json.dumps(
            {
                "custom_id": "R0000000007",
                "response": {
                    "status_code": 200,
                    "body": {
                        "choices": [{"message": {"content": "42"}}],
                        "usage": {"prompt_tokens": 10**42, "completion_tokens": 1},
                    },
                },
            }
        ),
    }
    stray = json.dumps({"custom_id": "R0000009999", "response": {"status_code": 200, "body": {}}})
    kept = [spoilt.get(custom_id, line) for custom_id, line in lines.items()] + [stray]
    return "\n".join(kept).encode("utf-8", errors="surrogateescape") + b"\n"


def test_output_lines_that_cannot_be_read_leave_their_cases_unanswered_with_the_reason(
    fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a Batch API whose output file spoils the lines of the first eight cases, one way each, and
    # answers a record no case asked
    _register(cloud, tmp_path, "gsm8k-en")
    models.batches.rewrite_output(_hostile_output)

    # When a batch run goes through
    execution = _live_run(cloud, "batch-spoilt", _openai_model(models.base_url), example="gsm8k-en")

    # Then the run completed on the 32 answers it could read, each spoilt case unanswered with its reason
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get("batch-spoilt")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    assert run.inference is not None
    assert (run.inference.answered, run.inference.unanswered) == (32, 8)
    log = _lines(cloud, run.files[RunOutput.INFERENCE_LOG])
    errors = [entry["error"] for entry in log[:8]]
    api = "the OpenAI-compatible Batch API answered a line that "
    assert errors[0].startswith(api + "is not UTF-8 (byte ")
    assert errors[1].startswith(api + "is not JSON (")
    assert errors[2] == api + "is an array, not a JSON object"
    assert errors[3] == "the Batch API: HTTP 200 and no answer"
    assert errors[4].endswith("returned more than one record for this case")
    huge = 9 * 1024 * 1024 + 39
    assert errors[5] == api + f"is {huge} bytes, more than the 8388608 an output record may be"
    assert errors[6].endswith(
        "returned no record for this case (1 of its output lines could not be read, none naming a record: "
        "line 8 of output.jsonl.out is not JSON (Expecting value: line 1 column 1 (char 0)))"
    )
    assert errors[7] == (
        "the OpenAI-compatible Batch API counted <a number of more than 20 digits> input tokens for this "
        "record, more than the 100000000 any model takes: its answer is not trusted"
    )
    assert all(entry["answered"] for entry in log[8:])
