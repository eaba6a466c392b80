"""Training runs on the local cloud: the REST API launches them and the real TrainingPipeline, executing
in moto, uploads the package's train and validation files, starts the provider job and follows it.

One cloud for the module (synthesized with one-second polls and four polls before a timeout). The provider
is moto's Bedrock through the real adapter, or an in-test fake where a fault must be injected.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import secrets
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from benchgen.aws.tables.connections import ConnectionsRepo
from benchgen.aws.tables.packages import PackagesRepo
from benchgen.aws.tables.preparations import PreparationsRepo
from benchgen.aws.tables.training_runs import TrainingRunsRepo
from benchgen.bucket_layout import package_key, training_execution_name
from benchgen.providers import registry
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.records.packages import PackageFile, PackageRecord, PackageStatus
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.records.training_runs import TrainingStatus
from benchgen.settings import load_settings
from benchgen.training.examples import text_hash
from benchgen.vocabulary import ProviderKind
from cli.api_client import Api
from infra.constructs.training import LOCAL_TRAINING_CONTEXT, TRAINING_MAX_POLLS
from localcloud.callers import running_as
from localcloud.cloud import LocalCloud
from tests.integration.factories import everything_stored, received_events, watch_events
from tests.training_material import HELD_OUT_QUESTION, TEST, TRAIN, VALIDATION, conversation_row

BEDROCK = ProviderKind("bedrock")
SAGEMAKER = ProviderKind("sagemaker")
OPENAI_COMPATIBLE = ProviderKind("openai-compatible")

NOVA = "amazon.nova-micro-v1:0:128k"
MAX_POLLS = 4
ROLE = "arn:aws:iam::123456789012:role/benchgen-training"
PIPELINE = "TrainingPipeline"


class Caller(Api):
    """The REST API as one signed-in user, known by the subject of their token."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(url, token)
        payload = token.split(".")[1]
        self.user = str(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"])


@dataclass
class World:
    cloud: LocalCloud
    owner: Caller
    stranger: Caller
    events: str
    counter: list[int] = field(default_factory=lambda: [0])

    def new_id(self, kind: str) -> str:
        self.counter[0] += 1
        return f"{kind}-{self.counter[0]}"

    @property
    def training_runs(self) -> TrainingRunsRepo:
        return TrainingRunsRepo(load_settings().training_runs_table)

    def wait(self, training_run_id: str) -> dict[str, Any]:
        return self.cloud.wait_for_execution(
            training_execution_name(training_run_id),
            timeout=90,
            state_machine_arn=self.cloud.state_machine_arns[PIPELINE],
        )

    def executions(self) -> list[str]:
        listed = self.cloud.client("stepfunctions").list_executions(
            stateMachineArn=self.cloud.state_machine_arns[PIPELINE]
        )
        return [execution["name"] for execution in listed["executions"]]

    def training_objects(self, training_run_id: str) -> list[str]:
        listed = self.cloud.client("s3").list_objects_v2(
            Bucket=self.cloud.bucket, Prefix=f"training/{training_run_id}/"
        )
        return sorted(item["Key"] for item in listed.get("Contents", []))

    def object(self, key: str) -> bytes:
        body: bytes = self.cloud.client("s3").get_object(Bucket=self.cloud.bucket, Key=key)["Body"].read()
        return body

    def seed(
        self,
        *,
        base_model: str = NOVA,
        train: bytes = TRAIN,
        provider: ProviderKind = BEDROCK,
        secret_arn: str | None = None,
        base_url: str = "https://api.together.example/v1",
    ) -> tuple[str, str]:
        """A Ready package of the owner's (bedrock-conversation, with one held-out case) and a connection."""
        settings = load_settings()
        preparation_id, package_id, connection_id = (self.new_id(k) for k in ("prep", "pkg", "conn"))
        manifest = {
            "kind": "benchgen-package",
            "package_id": package_id,
            "held_out": {
                "count": 1,
                "cases": [{"case_id": "case-held", "text_hash": text_hash(HELD_OUT_QUESTION)}],
            },
        }
        members = {"manifest.json": json.dumps(manifest).encode(), "train.jsonl": train}
        members |= {"validation.jsonl": VALIDATION, "test.jsonl": TEST}
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        data = buffer.getvalue()
        key = package_key(package_id)
        self.cloud.client("s3").put_object(Bucket=self.cloud.bucket, Key=key, Body=data)
        PreparationsRepo(settings.preparations_table).create(
            PreparationRecord(
                preparation_id=preparation_id,
                owner=self.owner.user,
                status=PreparationStatus.READY,
                environment_id="gsm8k-en",
                environment_version="v1",
                method="demonstration",
                selection="wrong_plus_augmented",
                run_ids=["run-1"],
                base_model=base_model,
                suggested_hyperparams={"epochCount": 2, "learningRate": 0.00001},
                state_hash="state",
                examples_key="preparations/x/examples.jsonl",
                held_out_key="preparations/x/held_out.jsonl",
                coverage_key="preparations/x/coverage.json",
            )
        )
        files = {
            name: PackageFile(
                sha256=hashlib.sha256(body).hexdigest(), rows=body.count(b"\n"), bytes=len(body)
            )
            for name, body in members.items()
            if name.endswith(".jsonl")
        }
        profile = {
            BEDROCK: "bedrock-conversation",
            SAGEMAKER: "sagemaker-sft",
            OPENAI_COMPATIBLE: "openai-chat",
        }[provider]
        PackagesRepo(settings.packages_table).put_if_absent(
            PackageRecord(
                package_id=package_id,
                preparation_id=preparation_id,
                owner=self.owner.user,
                profile=profile,
                status=PackageStatus.READY,
                state_hash="state",
                package_key=key,
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                files=files,
            )
        )
        aws = provider != OPENAI_COMPATIBLE
        ConnectionsRepo(settings.connections_table).put(
            ConnectionRecord(
                connection_id=connection_id,
                owner=self.owner.user,
                name="training",
                provider=provider,
                region="us-east-1" if aws else None,
                role_arn=ROLE if aws else None,
                base_url=None if aws else base_url,
                secret_arn=secret_arn,
                profile=registry.provider(provider).capabilities,
            )
        )
        return package_id, connection_id

    def launch(self, package_id: str, connection_id: str, **extra: Any) -> dict[str, Any]:
        status, answer = self.owner.call(
            "POST", "/training-runs", {"package_id": package_id, "connection_id": connection_id, **extra}
        )
        assert status == 202, answer
        return dict(answer)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    from infra.synth import synth_stacks

    stacks = synth_stacks({**LOCAL_TRAINING_CONTEXT, TRAINING_MAX_POLLS: MAX_POLLS})
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
            patch.delenv(name, raising=False)
        with LocalCloud(stacks) as cloud:
            owner = cloud.create_user("trainer@example.com", "Correct-Horse-9-Battery!")
            stranger = cloud.create_user("someone@example.com", "Correct-Horse-9-Battery!")
            with cloud.serve_api(access_log=False) as server:
                yield World(
                    cloud, Caller(server.url, owner), Caller(server.url, stranger), watch_events(cloud)
                )
                cloud.settle()


# ---- a provider to inject faults with ---------------------------------------------------------------------


@dataclass
class FakeJobs:
    """A provider whose describes answer ``script`` in order (the last repeats); records every call."""

    script: list[JobState | ProviderFault]
    started: list[JobSpec] = field(default_factory=list)
    described: int = 0
    stopped: list[str | None] = field(default_factory=list)
    uploads: list[tuple[str, bytes]] = field(default_factory=list)

    def upload(self, name: str, data: bytes) -> str | None:
        self.uploads.append((name, data))
        return f"file-{len(self.uploads)}"

    def start(self, spec: JobSpec) -> JobState:
        self.started.append(spec)
        return JobState(provider_status="pending", status=TrainingStatus.QUEUED, job_id=f"ft-{spec.job_name}")

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        step = self.script[min(self.described, len(self.script) - 1)]
        self.described += 1
        if isinstance(step, ProviderFault):
            raise step
        return step

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        self.stopped.append(job_id)
        return JobState(provider_status="cancelled", status=TrainingStatus.CANCELLED, job_id=job_id)


def _use(monkeypatch: pytest.MonkeyPatch, factory: Callable[[ConnectionRecord], Any]) -> None:
    import functions.training_job.handler as job_handler
    import functions.upload_training.handler as upload_handler

    monkeypatch.setattr(job_handler, "jobs_for", factory)
    monkeypatch.setattr(upload_handler, "jobs_for", factory)


RUNNING = JobState(provider_status="running", status=TrainingStatus.RUNNING, job_id="ft-1")
DONE = JobState(
    provider_status="completed",
    status=TrainingStatus.SUCCEEDED,
    job_id="ft-1",
    result_model="trainer/example-tuned",
    cost={"trained_tokens": 12000},
)


# ---- Bedrock on moto, through the real adapter ----------------------------------------------------------


def test_a_bedrock_job_is_followed_to_succeeded_and_announced(world: World) -> None:
    from moto.bedrock.models import bedrock_backends

    # Given moto's Bedrock, reached through the real adapter, whose job the local cloud's provider clock
    # completes after two reads
    backend = bedrock_backends["123456789012"]["us-east-1"]
    package_id, connection_id = world.seed()

    # When the owner launches a training run without naming a base model
    launched = world.launch(package_id, connection_id, hyperparameters={"epochCount": 2})

    # Then the answer says which package trains which base model, the one its preparation recorded
    run = launched["training_run"]
    assert launched["notices"] == [
        f"package {package_id} ({run['package_profile']}, prepared from {run['environment_id']} "
        f"{run['environment_version']} in preparation {run['preparation_id']}) trains {NOVA}, the base model "
        "recorded with its preparation: the launch named none"
    ]
    assert launched["warnings"] == []
    run = launched["training_run"]
    assert run["status"] == "Queued" and run["base_model"] == NOVA and run["base_model_source"] == "package"
    assert run["hyperparameters"] == {"epochCount": "2"}
    assert run["suggested_hyperparams"] == {"epochCount": 2, "learningRate": 0.00001}

    # and the pipeline follows the job to Succeeded
    assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"
    status, read = world.owner.call("GET", f"/training-runs/{run['training_run_id']}")
    assert status == 200
    assert read["status"] == "Succeeded"
    assert [(c["status"], c["provider_status"]) for c in read["timeline"]] == [
        ("Queued", None),
        ("Running", "InProgress"),
        ("Succeeded", "Completed"),
    ]
    job = backend.model_customization_jobs[read["job_name"]]
    assert read["result_model"] == job.output_model_arn
    assert read["job_id"] == job.job_arn
    # the job read only the train and validation files, uploaded under the run's prefix
    prefix = f"s3://{world.cloud.bucket}/training/{run['training_run_id']}/"
    assert job.training_data_config == {"s3Uri": prefix + "train.jsonl"}
    assert world.training_objects(run["training_run_id"]) == [
        f"training/{run['training_run_id']}/train.jsonl",
        f"training/{run['training_run_id']}/validation.jsonl",
    ]
    assert world.object(f"training/{run['training_run_id']}/train.jsonl") == TRAIN
    # and TrainingSucceeded went to the bus with the model
    announced = [
        detail for kind, detail in received_events(world.cloud, world.events) if kind == "TrainingSucceeded"
    ]
    assert {
        "training_run_id": run["training_run_id"],
        "status": "Succeeded",
        "job_id": job.job_arn,
        "result_model": job.output_model_arn,
    } in announced


# ---- faults ---------------------------------------------------------------------------------------------


def test_a_failed_bedrock_job_fails_the_run_with_the_providers_message(world: World) -> None:
    # Given a Bedrock job that the provider fails with its own message
    package_id, connection_id = world.seed()
    run = world.launch(package_id, connection_id)["training_run"]
    message = "Training data contains reserved string 'Assistant:' in 3 rows"
    world.cloud.provider_clock.fail(run["job_name"], message)

    # When the run is followed to its end
    assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

    # Then the run is Failed with the provider's own message, in its record and its timeline
    stored = world.training_runs.get(run["training_run_id"])
    assert stored is not None and stored.status is TrainingStatus.FAILED
    assert stored.failure_reason == message
    assert [(c.status, c.provider_status) for c in stored.timeline][-1] == (TrainingStatus.FAILED, "Failed")
    assert stored.timeline[-1].message == message
    assert stored.result_model is None and stored.finished_at is not None
    announced = [d for kind, d in received_events(world.cloud, world.events) if kind == "TrainingFailed"]
    assert {
        "training_run_id": run["training_run_id"],
        "status": "Failed",
        "job_id": stored.job_id,
        "result_model": None,
    } in announced


def test_a_sagemaker_job_is_followed_to_succeeded_with_its_model_artifacts(world: World) -> None:
    # Given a SageMaker connection and a sagemaker-sft package; moto's job runs until the clock ends it
    package_id, connection_id = world.seed(
        provider=SAGEMAKER, base_model="meta-textgeneration-llama-3-1-8b-instruct"
    )

    # When a training run is launched and followed
    run = world.launch(package_id, connection_id)["training_run"]
    assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

    # Then it ran, then Succeeded, naming the model artifacts under the run's output prefix
    stored = world.training_runs.get(run["training_run_id"])
    assert stored is not None and stored.status is TrainingStatus.SUCCEEDED, stored
    assert [c.status for c in stored.timeline] == [
        TrainingStatus.QUEUED,
        TrainingStatus.RUNNING,
        TrainingStatus.SUCCEEDED,
    ]
    assert stored.result_model is not None
    assert stored.result_model.startswith(
        f"s3://{world.cloud.bucket}/training/{run['training_run_id']}/output/"
    )
    described = world.cloud.client("sagemaker").describe_training_job(TrainingJobName=run["job_name"])
    assert [channel["ChannelName"] for channel in described["InputDataConfig"]] == ["train", "validation"]


@pytest.mark.parametrize(
    "fault",
    [
        "bedrock answered ThrottlingException: Too many requests, please wait before trying again",
        "together answered 503: the service is temporarily unavailable",
        "sagemaker did not answer: Read timeout on endpoint URL",
    ],
)
def test_a_fault_that_may_pass_is_retried_and_the_run_then_succeeds(
    world: World, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    # Given a provider that throttles (or answers 5xx, or times out) twice, then reports the job completed
    passing = ProviderFault(fault, retryable=True)
    fake = FakeJobs([passing, passing, DONE])
    _use(monkeypatch, lambda connection: fake)
    package_id, connection_id = world.seed()

    # When a training run is launched and followed
    run = world.launch(package_id, connection_id)["training_run"]
    assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

    # Then the throttled polls were tried again, and the run Succeeded with the provider's model and cost
    stored = world.training_runs.get(run["training_run_id"])
    assert stored is not None and stored.status is TrainingStatus.SUCCEEDED
    assert fake.described == 3
    assert len(fake.started) == 1
    assert stored.result_model == "trainer/example-tuned"
    assert stored.cost == {"trained_tokens": 12000}


def test_a_provider_refusal_is_not_retried_and_fails_the_run_with_its_message(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a provider that refuses a describe for good
    refusal = ProviderFault(
        "bedrock: ValidationException: the job's role cannot read the bucket", retryable=False
    )
    fake = FakeJobs([refusal])
    _use(monkeypatch, lambda connection: fake)
    package_id, connection_id = world.seed()

    run = world.launch(package_id, connection_id)["training_run"]
    assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

    stored = world.training_runs.get(run["training_run_id"])
    assert stored is not None and stored.status is TrainingStatus.FAILED
    assert stored.failure_reason == "bedrock: ValidationException: the job's role cannot read the bucket"
    assert fake.described == 1


def test_a_job_that_never_ends_times_out_and_is_stopped(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a provider whose job runs forever
    fake = FakeJobs([RUNNING])
    _use(monkeypatch, lambda connection: fake)
    package_id, connection_id = world.seed()

    run = world.launch(package_id, connection_id)["training_run"]
    assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

    # Then after its polls the run is Failed "timed out", and the job was asked to stop
    stored = world.training_runs.get(run["training_run_id"])
    assert stored is not None and stored.status is TrainingStatus.FAILED
    assert stored.failure_reason == (
        f"timed out after {MAX_POLLS} polls (about {MAX_POLLS} seconds) without the provider job ending; "
        "it was asked to stop (the provider reports cancelled)"
    )
    assert fake.described == MAX_POLLS
    assert fake.stopped == ["ft-benchgen-" + run["training_run_id"]]


def test_cancel_stops_the_provider_job_and_records_cancelled(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a running training run
    fake = FakeJobs([RUNNING])
    _use(monkeypatch, lambda connection: fake)
    package_id, connection_id = world.seed()
    run = world.launch(package_id, connection_id)["training_run"]
    training_run_id = run["training_run_id"]
    deadline = time.monotonic() + 30
    while not fake.started and time.monotonic() < deadline:
        time.sleep(0.05)

    # When someone else asks to cancel it, then its owner does
    assert world.stranger.call("POST", f"/training-runs/{training_run_id}/cancel")[0] == 404
    status, answer = world.owner.call("POST", f"/training-runs/{training_run_id}/cancel")
    assert status == 202, answer
    assert answer["cancel_requested"] is True

    # Then the pipeline stops the job and the run ends Cancelled, announced as such
    assert world.wait(training_run_id)["status"] == "SUCCEEDED"
    stored = world.training_runs.get(training_run_id)
    assert stored is not None and stored.status is TrainingStatus.CANCELLED
    assert fake.stopped == [f"ft-benchgen-{training_run_id}"]
    assert (
        stored.timeline[-1].message == "cancelled at the owner's request: the provider job was asked to stop"
    )
    kinds = [
        kind
        for kind, detail in received_events(world.cloud, world.events)
        if detail["training_run_id"] == training_run_id
    ]
    assert kinds == ["TrainingCancelled"]
    # and a second cancel is refused: nothing is left to cancel
    again = world.owner.call("POST", f"/training-runs/{training_run_id}/cancel")
    assert again[0] == 409
    assert again[1]["message"] == f"training run {training_run_id} is already Cancelled: nothing to cancel"


# ---- launching --------------------------------------------------------------------------------------------


def test_the_same_idempotency_key_twice_gives_one_training_run_and_one_job(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeJobs([DONE])
    _use(monkeypatch, lambda connection: fake)
    package_id, connection_id = world.seed()
    body = {"package_id": package_id, "connection_id": connection_id}
    key = {"Idempotency-Key": "launch-" + secrets.token_hex(8)}

    # When the same launch is sent twice with one key
    first = world.owner.call("POST", "/training-runs", body, key)
    second = world.owner.call("POST", "/training-runs", body, key)

    # Then both answers name one training run, with one execution and one provider job
    assert first[0] == second[0] == 202
    training_run_id = first[1]["training_run"]["training_run_id"]
    assert second[1]["training_run"]["training_run_id"] == training_run_id
    assert second[1]["notices"] == first[1]["notices"]
    world.wait(training_run_id)
    assert world.executions().count(training_run_id) == 1
    assert len(fake.started) == 1
    listed = world.owner.call("GET", "/training-runs?limit=100")[1]
    assert [item["package_id"] for item in listed["items"]].count(package_id) == 1


def test_a_train_file_with_a_held_out_row_is_refused_at_upload_and_nothing_is_uploaded(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a package whose train file repeats a held-out case's question (spacing and case changed)
    fake = FakeJobs([DONE])
    _use(monkeypatch, lambda connection: fake)
    leaked = TRAIN + conversation_row(
        "  a TRAIN has 3 cars with 12 seats   each. How many seats are there?", "36"
    )
    package_id, connection_id = world.seed(train=leaked)

    # When it is launched
    run = world.launch(package_id, connection_id)["training_run"]
    assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

    # Then the upload refused it, saying which row; no file was uploaded and no job started
    stored = world.training_runs.get(run["training_run_id"])
    assert stored is not None and stored.status is TrainingStatus.FAILED
    assert stored.failure_reason == (
        "refused: rows to upload would carry held-out test cases (train.jsonl line 11 repeats the text of "
        "a held-out case); nothing was uploaded: generate the preparation again, package it, and launch a "
        "new run"
    )
    assert world.training_objects(run["training_run_id"]) == []
    assert fake.started == [] and fake.uploads == []


def test_an_openai_compatible_run_sends_train_and_validation_only_and_keeps_the_key_nowhere(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    from localcloud.model_server import ExampleModelServer

    caplog.set_level(logging.INFO)
    # Given the example server's simulated fine-tuning, which answers only with its key, and that key in a
    # tagged secret named by an OpenAI-compatible connection (the real adapter, no fake)
    key = "sk-planted-" + secrets.token_hex(12)
    arn = world.cloud.client("secretsmanager").create_secret(
        Name=f"benchgen/training-{secrets.token_hex(4)}",
        SecretString=key,
        Tags=[{"Key": "benchgen:access", "Value": "inference"}],
    )["ARN"]
    with ExampleModelServer(api_key=key) as server:
        package_id, connection_id = world.seed(
            provider=OPENAI_COMPATIBLE,
            base_model="example-base",
            secret_arn=arn,
            base_url=server.base_url,
        )

        # When a training run is launched on it and followed
        run = world.launch(package_id, connection_id)["training_run"]
        assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

        # Then it Succeeded with the provider's model, trained on the two uploaded files and nothing else
        stored = world.training_runs.get(run["training_run_id"])
        assert stored is not None and stored.status is TrainingStatus.SUCCEEDED, stored
        assert stored.result_model == "example-tuned"
        assert sorted(server.fine_tunes.files.values()) == sorted([TRAIN, VALIDATION])
        (body,) = server.fine_tunes.bodies
        assert {body["training_file"], body["validation_file"]} == set(server.fine_tunes.files)
    assert world.training_objects(run["training_run_id"]) == []
    # and the key, read when the provider was called, is in no item, object, execution or log line
    stored_text = everything_stored(world.cloud)
    assert arn in stored_text and key not in stored_text
    logged = "\n".join(json.dumps(record.__dict__, default=str) for record in caplog.records)
    assert run["training_run_id"] in logged
    assert key not in logged


def test_a_job_failure_quoting_the_key_is_recorded_and_shown_without_it(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    from localcloud.model_server import ExampleModelServer

    caplog.set_level(logging.INFO)
    # Given an OpenAI-compatible provider (the real adapter) whose job fails with a message quoting the key
    # it was called with, as some services quote a request back
    key = "sk-planted-" + secrets.token_hex(12)
    arn = world.cloud.client("secretsmanager").create_secret(
        Name=f"benchgen/training-{secrets.token_hex(4)}",
        SecretString=key,
        Tags=[{"Key": "benchgen:access", "Value": "inference"}],
    )["ARN"]
    with ExampleModelServer(api_key=key) as server:
        server.fine_tunes.fail(f"training file rejected for api_key={key} (Authorization: Bearer {key})")
        package_id, connection_id = world.seed(
            provider=OPENAI_COMPATIBLE, base_model="example-base", secret_arn=arn, base_url=server.base_url
        )

        # When a training run is launched on it and followed to its end
        run = world.launch(package_id, connection_id)["training_run"]
        assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

    # Then the run is Failed, and what its owner reads of it lacks the key
    status, shown = world.owner.call("GET", f"/training-runs/{run['training_run_id']}")
    assert status == 200 and shown["status"] == "Failed"
    assert key not in json.dumps(shown)
    # but keeps the provider's own words, the key taken out of them, in the record and its timeline
    said = "training file rejected for api_key=[redacted] (Authorization: Bearer [redacted])"
    assert shown["failure_reason"] == said
    assert shown["timeline"][-1]["message"] == said
    # and the key is in no item, object, execution history or log line
    stored = everything_stored(world.cloud)
    assert said in stored and key not in stored
    logged = "\n".join(json.dumps(record.__dict__, default=str) for record in caplog.records)
    assert run["training_run_id"] in logged
    assert key not in logged


def test_an_override_warns_naming_both_models_and_profile_refusals_say_what_is_unsupported(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeJobs([DONE])
    _use(monkeypatch, lambda connection: fake)
    # Given a package whose recorded base model Bedrock does not train
    package_id, connection_id = world.seed(base_model="example-base")

    # When it is launched as recorded, the connection's profile refuses it, naming what it accepts
    status, refused = world.owner.call(
        "POST", "/training-runs", {"package_id": package_id, "connection_id": connection_id}
    )
    assert status == 400
    assert refused["message"] == (
        "Bedrock model customization fine-tunes only Nova, Llama 3.1 and Claude 3 Haiku models, and base "
        "model example-base is none of them: this connection accepts nova, llama3.1, claude-3-haiku"
    )
    # and a hyperparameter the provider does not take is refused by name
    status, refused = world.owner.call(
        "POST",
        "/training-runs",
        {
            "package_id": package_id,
            "connection_id": connection_id,
            "base_model": NOVA,
            "hyperparameters": {"batchSize": 8},
        },
    )
    assert status == 400
    assert refused["message"].startswith("batchSize is not one of its hyperparameters")

    # When a Nova base model overrides it, the run is launched with a warning naming both
    launched = world.launch(package_id, connection_id, base_model=NOVA)
    assert launched["notices"] == []
    assert launched["warnings"] == [
        f"base model {NOVA} overrides example-base, the base model recorded with the package's preparation: "
        "the trained model is compared against the one you name"
    ]
    assert launched["training_run"]["base_model_source"] == "request"
    world.wait(launched["training_run"]["training_run_id"])


def test_training_runs_are_their_owners_alone(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeJobs([DONE])
    _use(monkeypatch, lambda connection: fake)
    package_id, connection_id = world.seed()
    run = world.launch(package_id, connection_id)["training_run"]
    world.wait(run["training_run_id"])

    # Another user finds neither the run, nor the package or connection to launch with
    status, answer = world.stranger.call("GET", f"/training-runs/{run['training_run_id']}")
    assert status == 404
    assert (
        answer["message"]
        == f"no training run {run['training_run_id']!r} of yours: GET /training-runs lists yours"
    )
    status, answer = world.stranger.call(
        "POST", "/training-runs", {"package_id": package_id, "connection_id": connection_id}
    )
    assert status == 404
    assert answer["message"] == f"no package {package_id!r} of yours: check the id (GET /packages/{{id}})"
    assert world.stranger.call("GET", "/training-runs")[1]["items"] == []
    # while the owner's list holds it, newest first
    items = world.owner.call("GET", "/training-runs?limit=1")[1]["items"]
    assert [item["training_run_id"] for item in items] == [run["training_run_id"]]


def test_a_run_cancelled_before_its_job_starts_never_starts_one(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an OpenAI-compatible provider, and the owner's cancel arriving while the files are uploaded
    class CancelledDuringUpload(FakeJobs):
        def upload(self, name: str, data: bytes) -> str | None:
            # the file is named by the job name, "benchgen-<training run id>", then the file's own name
            training_run_id = name.removeprefix("benchgen-").rsplit("-", 1)[0]
            # the owner's cancel, not the upload step's: made outside the function's role
            with running_as(None):
                world.training_runs.request_cancel(training_run_id, owner=world.owner.user)
            return super().upload(name, data)

    fake = CancelledDuringUpload([DONE])
    _use(monkeypatch, lambda connection: fake)
    package_id, connection_id = world.seed(provider=OPENAI_COMPATIBLE, base_model="example-base")

    # When the run is launched and followed
    run = world.launch(package_id, connection_id)["training_run"]
    assert world.wait(run["training_run_id"])["status"] == "SUCCEEDED"

    # Then no provider job was started, and the run ended Cancelled, saying so
    stored = world.training_runs.get(run["training_run_id"])
    assert stored is not None and stored.cancel_requested
    assert stored.status is TrainingStatus.CANCELLED
    assert fake.uploads and fake.started == []
    assert stored.timeline[-1].message == "cancelled at the owner's request before the provider job started"


def test_the_list_filtered_by_preparation_holds_only_its_training_runs_in_pages_and_only_the_owners(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two training runs of one preparation's package and one of another preparation's
    _use(monkeypatch, lambda connection: FakeJobs([DONE]))
    package_id, connection_id = world.seed()
    other_package, other_connection = world.seed()
    launched = [world.launch(package_id, connection_id)["training_run"] for _ in range(2)]
    other = world.launch(other_package, other_connection)["training_run"]
    for run in [*launched, other]:
        world.wait(run["training_run_id"])
    preparation_id = launched[0]["preparation_id"]
    assert other["preparation_id"] != preparation_id

    # When the owner lists the first preparation's training runs one a page
    first = world.owner.call("GET", f"/training-runs?preparation_id={preparation_id}&limit=1")
    assert first[0] == 200, first
    last = world.owner.call(
        "GET", f"/training-runs?preparation_id={preparation_id}&limit=1&next_token={first[1]['next_token']}"
    )

    # Then the pages hold exactly its two runs, newest first, and the last page says it is the last
    pages = [[item["training_run_id"] for item in page[1]["items"]] for page in (first, last)]
    assert pages == [[launched[1]["training_run_id"]], [launched[0]["training_run_id"]]]
    assert last[1].get("next_token") is None
    # and the other preparation's run is listed under its own preparation only
    listed = world.owner.call("GET", f"/training-runs?preparation_id={other['preparation_id']}")[1]
    assert [item["training_run_id"] for item in listed["items"]] == [other["training_run_id"]]
    # and another user filtering on the same preparation sees none of the owner's runs
    assert world.stranger.call("GET", f"/training-runs?preparation_id={preparation_id}") == (
        200,
        {"items": [], "next_token": None},
    )
    # and a preparation id that cannot be one is refused with the field named
    status, refused = world.owner.call("GET", "/training-runs?preparation_id=not%20an%20id")
    assert status == 422
    assert [problem["field"] for problem in refused["errors"]] == ["preparation_id"]
