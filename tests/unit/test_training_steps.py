"""The TrainingPipeline's steps over the in-memory ports: Validate checks the run again, Upload sends the
train and validation files and never a held-out row, Start starts one job, Poll follows it through the
kind's statuses, TimeOut and Fail end the run saying why."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchgen.bucket_layout import package_key
from benchgen.errors import Unsupported
from benchgen.providers.capabilities import ConnectionLimits
from benchgen.providers.checks import narrow
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import ProviderFault, job_name_for
from benchgen.records.packages import PackageFile, PackageRecord, PackageStatus
from benchgen.records.training_runs import StatusChange, TrainingRunRecord, TrainingStatus
from benchgen.steps.training import (
    CANCELLED_BY_OWNER,
    JobContext,
    ProviderBusy,
    TrainingInput,
    TrainingRefused,
    Uploaded,
    fail_step,
    poll_step,
    start_step,
    time_out_step,
    upload_step,
    validate_step,
)
from benchgen.training.examples import text_hash
from benchgen.vocabulary import Method, ProviderKind
from tests.fakes import MemoryConnections, MemoryJobs, MemoryPackages, MemoryStore, MemoryTrainingRuns
from tests.training_material import HELD_OUT_QUESTION, TEST, TRAIN, VALIDATION, conversation_row

BEDROCK = ProviderKind("bedrock")
OPENAI_COMPATIBLE = ProviderKind("openai-compatible")
RUN_ID = "train-00112233445566778899aabb"
JOB_NAME = job_name_for(RUN_ID)
JOB_ID = f"job-{JOB_NAME}"
PACKAGE_ID = "pkg-1"
BUCKET = "data-bucket"
NOVA = "amazon.nova-micro-v1:0:128k"
ROLE = "arn:aws:iam::123456789012:role/benchgen-training"
PROFILES = {BEDROCK: "bedrock-conversation", OPENAI_COMPATIBLE: "openai-chat"}


GRADER = "def grade(sample, item):\n    return 1.0\n"
UPLOADED = Uploaded(train_uri=f"s3://{BUCKET}/training/{RUN_ID}/train.jsonl")


def _package(members: dict[str, bytes]) -> bytes:
    manifest = {
        "kind": "benchgen-package",
        "package_id": PACKAGE_ID,
        "held_out": {
            "count": 1,
            "cases": [{"case_id": "case-held", "text_hash": text_hash(HELD_OUT_QUESTION)}],
        },
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


class Training:
    """One training run's world: its Ready package in the bucket, the packages, connections and training
    runs tables, and the provider of its connection's kind."""

    def __init__(
        self,
        root: Path,
        *,
        kind: ProviderKind = BEDROCK,
        train: bytes = TRAIN,
        validation: bytes = VALIDATION,
        jobs: MemoryJobs | None = None,
        hyperparameters: dict[str, str] | None = None,
        max_rows: int | None = None,
        method: Method = Method.DEMONSTRATION,
        extra: dict[str, bytes] | None = None,
    ) -> None:
        self.root = root
        members = {"train.jsonl": train, "validation.jsonl": validation, "test.jsonl": TEST, **(extra or {})}
        body = _package(members)
        sha256 = hashlib.sha256(body).hexdigest()
        self.store = MemoryStore({package_key(PACKAGE_ID): body})
        self.packages = MemoryPackages(
            PackageRecord(
                package_id=PACKAGE_ID,
                preparation_id="prep-1",
                owner="alice",
                profile=PROFILES[kind],
                status=PackageStatus.READY,
                state_hash="state",
                package_key=package_key(PACKAGE_ID),
                sha256=sha256,
                size=len(body),
                files={
                    name: PackageFile(
                        sha256=hashlib.sha256(data).hexdigest(), rows=data.count(b"\n"), bytes=len(data)
                    )
                    for name, data in members.items()
                },
            )
        )
        aws = kind is not OPENAI_COMPATIBLE
        profile = narrow(kind, None)
        if max_rows is not None:
            profile = profile.model_copy(update={"limits": ConnectionLimits(max_rows=max_rows)})
        self.connections = MemoryConnections(
            ConnectionRecord(
                connection_id="conn-1",
                owner="alice",
                name="training",
                provider=kind,
                region="us-east-1" if aws else None,
                role_arn=ROLE if aws else None,
                base_url=None if aws else "https://api.together.example/v1",
                profile=profile,
            )
        )
        self.runs = MemoryTrainingRuns(
            TrainingRunRecord(
                training_run_id=RUN_ID,
                owner="alice",
                connection_id="conn-1",
                provider=kind,
                package_id=PACKAGE_ID,
                package_sha256=sha256,
                package_profile=PROFILES[kind],
                preparation_id="prep-1",
                environment_id="gsm8k-en",
                environment_version="v1",
                method=method,
                base_model=NOVA if aws else "example-base",
                base_model_source="package",
                hyperparameters=hyperparameters or {},
                timeline=[StatusChange(status=TrainingStatus.QUEUED)],
                job_name=JOB_NAME,
            )
        )
        self.jobs = jobs or MemoryJobs(kind)
        self.on = JobContext(
            runs=self.runs, connections=self.connections, jobs_for=self.jobs.for_connection, bucket=BUCKET
        )
        self.deliveries = 0

    def validate(self) -> dict[str, Any]:
        return validate_step(
            TrainingInput(training_run_id=RUN_ID),
            runs=self.runs,
            connections=self.connections,
            packages=self.packages,
        )

    def upload(self) -> dict[str, Any]:
        self.deliveries += 1
        workdir = self.root / f"upload-{self.deliveries}"
        workdir.mkdir(parents=True)
        return upload_step(
            TrainingInput(training_run_id=RUN_ID),
            runs=self.runs,
            connections=self.connections,
            store=self.store,
            bucket=BUCKET,
            package_key=package_key,
            jobs_for=self.jobs.for_connection,
            workdir=workdir,
        )

    def start(self) -> dict[str, Any]:
        return start_step(TrainingInput(training_run_id=RUN_ID), UPLOADED, on=self.on)

    def poll(self, polls: int = 0) -> dict[str, Any]:
        return poll_step(TrainingInput(training_run_id=RUN_ID), UPLOADED, polls, on=self.on)

    def time_out(self, polls: int, poll_seconds: int) -> dict[str, Any]:
        return time_out_step(TrainingInput(training_run_id=RUN_ID), UPLOADED, polls, poll_seconds, on=self.on)

    def fail(self, error: dict[str, Any]) -> dict[str, Any]:
        return fail_step(TrainingInput(training_run_id=RUN_ID), error, runs=self.runs)

    def run(self) -> TrainingRunRecord:
        record = self.runs.get(RUN_ID)
        assert record is not None
        return record

    def change(self, **fields: Any) -> None:
        self.runs.records[RUN_ID] = self.run().model_copy(update=fields)


def _timeline(record: TrainingRunRecord) -> list[tuple[TrainingStatus, str | None]]:
    return [(change.status, change.provider_status) for change in record.timeline]


# ---- Validate ---------------------------------------------------------------------------------------------


def test_validate_answers_the_run_and_its_provider_when_package_and_connection_still_hold(
    tmp_path: Path,
) -> None:
    world = Training(tmp_path, hyperparameters={"epochCount": "2"})

    assert world.validate() == {"training_run_id": RUN_ID, "provider": "bedrock"}


def test_validate_refuses_a_run_whose_connection_was_deleted_since_launch(tmp_path: Path) -> None:
    world = Training(tmp_path)
    world.connections.records.clear()

    with pytest.raises(TrainingRefused) as refused:
        world.validate()

    assert str(refused.value) == (
        "connection conn-1 was deleted after the training run was launched: launch it again with a "
        "connection of yours"
    )


def test_validate_refuses_a_run_whose_package_is_no_longer_the_one_it_was_launched_on(
    tmp_path: Path,
) -> None:
    world = Training(tmp_path)
    package = world.packages.records[PACKAGE_ID]
    world.packages.records[PACKAGE_ID] = package.model_copy(update={"sha256": "ff" * 32})

    with pytest.raises(TrainingRefused) as refused:
        world.validate()

    assert str(refused.value) == (
        f"package {PACKAGE_ID} is no longer the Ready package with sha256 {world.run().package_sha256} the "
        "training run was launched on: launch it again on a Ready package"
    )


def test_validate_refuses_more_training_rows_than_the_connection_now_accepts(tmp_path: Path) -> None:
    world = Training(tmp_path, max_rows=5)

    with pytest.raises(Unsupported) as refused:
        world.validate()

    assert str(refused.value) == (
        "10 training rows are more than this connection accepts (at most 5): build the package with fewer "
        "rows, or use a connection with a higher limit"
    )


def test_validate_refuses_a_hyperparameter_the_provider_does_not_take(tmp_path: Path) -> None:
    world = Training(tmp_path, hyperparameters={"batchSize": "8"})

    with pytest.raises(Unsupported, match=r"^batchSize is not one of its hyperparameters"):
        world.validate()


# ---- Upload -----------------------------------------------------------------------------------------------


def test_upload_sends_train_and_validation_to_the_runs_prefix_and_never_the_test_file(tmp_path: Path) -> None:
    world = Training(tmp_path)

    answer = world.upload()

    prefix = f"training/{RUN_ID}/"
    assert answer == {
        "train_uri": f"s3://{BUCKET}/{prefix}train.jsonl",
        "validation_uri": f"s3://{BUCKET}/{prefix}validation.jsonl",
    }
    assert world.store.uploads == [f"{prefix}train.jsonl", f"{prefix}validation.jsonl"]
    assert world.store.objects[f"{prefix}train.jsonl"] == TRAIN
    assert world.store.objects[f"{prefix}validation.jsonl"] == VALIDATION
    assert not any(TEST in data for key, data in world.store.objects.items() if key.startswith(prefix))


def test_upload_refuses_a_train_row_that_repeats_a_held_out_case_and_uploads_nothing(tmp_path: Path) -> None:
    # Given a train file whose last row repeats the held-out question, spacing and case changed
    leaked = TRAIN + conversation_row(
        "  a TRAIN has 3 cars with 12 seats   each. How many seats are there?", "36"
    )
    world = Training(tmp_path, train=leaked)

    with pytest.raises(TrainingRefused) as refused:
        world.upload()

    assert str(refused.value) == (
        "refused: rows to upload would carry held-out test cases (train.jsonl line 11 repeats the text of a "
        "held-out case); nothing was uploaded: generate the preparation again, package it, and launch a "
        "new run"
    )
    assert world.store.uploads == []


def test_upload_refuses_a_validation_row_that_names_a_held_out_case_to_the_providers_upload_too(
    tmp_path: Path,
) -> None:
    leaked = VALIDATION + b'{"id": "case-held", "messages": []}\n'
    world = Training(tmp_path, kind=OPENAI_COMPATIBLE, validation=leaked)

    with pytest.raises(
        TrainingRefused, match=r"\(validation\.jsonl line 4 comes from held-out case 'case-held'\)"
    ):
        world.upload()

    assert world.jobs.files == {} and world.store.uploads == []


def test_upload_refuses_a_package_whose_bytes_are_not_the_ones_the_run_recorded(tmp_path: Path) -> None:
    world = Training(tmp_path)
    world.store.objects[package_key(PACKAGE_ID)] = _package({"train.jsonl": TRAIN})

    with pytest.raises(TrainingRefused) as refused:
        world.upload()

    assert str(refused.value) == (
        f"package {PACKAGE_ID} in the bucket does not have the sha256 {world.run().package_sha256} the "
        "training run recorded: nothing was uploaded; request the package again and launch a new run"
    )
    assert world.store.uploads == []


def test_an_openai_compatible_run_sends_its_files_to_the_providers_upload_and_not_the_bucket(
    tmp_path: Path,
) -> None:
    world = Training(tmp_path, kind=OPENAI_COMPATIBLE)

    answer = world.upload()

    assert answer == {"train_uri": "file-1", "validation_uri": "file-2"}
    assert world.jobs.files == {
        "file-1": (f"{JOB_NAME}-train.jsonl", TRAIN),
        "file-2": (f"{JOB_NAME}-validation.jsonl", VALIDATION),
    }
    assert world.store.uploads == []


def test_a_reinforcement_run_uploads_its_rows_and_carries_the_packages_grader_to_the_job(
    tmp_path: Path,
) -> None:
    world = Training(
        tmp_path, kind=OPENAI_COMPATIBLE, method=Method.REINFORCEMENT, extra={"grader.py": GRADER.encode()}
    )

    answer = world.upload()
    start_step(TrainingInput(training_run_id=RUN_ID), Uploaded(**answer), on=world.on)

    assert answer == {"train_uri": "file-1", "validation_uri": "file-2", "grader_source": GRADER}
    assert [name for name, _ in world.jobs.files.values()] == [
        f"{JOB_NAME}-train.jsonl",
        f"{JOB_NAME}-validation.jsonl",
    ]
    (spec,) = world.jobs.jobs.values()
    assert (spec.method, spec.grader_source) == (Method.REINFORCEMENT, GRADER)


def test_a_reinforcement_package_without_a_grader_is_refused_and_uploads_nothing(tmp_path: Path) -> None:
    world = Training(tmp_path, kind=OPENAI_COMPATIBLE, method=Method.REINFORCEMENT)

    with pytest.raises(TrainingRefused) as refused:
        world.upload()

    assert str(refused.value) == (
        f"package {PACKAGE_ID} holds no grader.py: a reinforcement run sends the environment's scoring as "
        "its grader; package the reinforcement preparation with a profile that writes it (openai-rft) and "
        "launch a new run"
    )
    assert world.jobs.files == {}


def test_a_package_without_validation_rows_uploads_the_train_file_alone(tmp_path: Path) -> None:
    world = Training(tmp_path, validation=b"\n")

    answer = world.upload()

    assert answer == {"train_uri": f"s3://{BUCKET}/training/{RUN_ID}/train.jsonl", "validation_uri": None}
    assert world.store.uploads == [f"training/{RUN_ID}/train.jsonl"]


def test_a_package_without_training_rows_is_refused(tmp_path: Path) -> None:
    world = Training(tmp_path, train=b"")

    with pytest.raises(TrainingRefused) as refused:
        world.upload()

    assert str(refused.value) == f"package {PACKAGE_ID} has no training rows: there is nothing to train on"


def test_a_package_without_training_rows_sends_no_file_to_the_provider(tmp_path: Path) -> None:
    world = Training(tmp_path, kind=OPENAI_COMPATIBLE, train=b"")

    with pytest.raises(TrainingRefused):
        world.upload()

    assert world.jobs.files == {}


def test_a_provider_that_gives_no_file_id_refuses_the_upload(tmp_path: Path) -> None:
    class NoFileIds(MemoryJobs):
        def upload(self, name: str, data: bytes) -> str | None:
            return None

    world = Training(tmp_path, kind=OPENAI_COMPATIBLE, jobs=NoFileIds(OPENAI_COMPATIBLE))

    with pytest.raises(TrainingRefused) as refused:
        world.upload()

    assert str(refused.value) == (
        f"the provider gave no file id for {JOB_NAME}-train.jsonl: launch the training run again"
    )


# ---- Start ------------------------------------------------------------------------------------------------


def test_start_starts_the_job_and_records_its_id_and_the_providers_word(tmp_path: Path) -> None:
    world = Training(
        tmp_path, jobs=MemoryJobs(BEDROCK, started="InProgress"), hyperparameters={"epochCount": "2"}
    )

    answer = world.start()

    run = world.run()
    assert (run.status, run.job_id) == (TrainingStatus.RUNNING, JOB_ID)
    assert _timeline(run) == [(TrainingStatus.QUEUED, None), (TrainingStatus.RUNNING, "InProgress")]
    assert answer == {
        "training_run_id": RUN_ID,
        "status": "Running",
        "terminal": False,
        "event": None,
        "polls": 0,
        "job_id": JOB_ID,
        "result_model": None,
    }
    # the job trains on the uploaded file, writes under the run's prefix and assumes the connection's role
    (spec,) = world.jobs.jobs.values()
    assert (spec.job_name, spec.base_model, spec.hyperparameters) == (JOB_NAME, NOVA, {"epochCount": "2"})
    assert (spec.train_uri, spec.output_uri, spec.role_arn) == (
        UPLOADED.train_uri,
        f"s3://{BUCKET}/training/{RUN_ID}/output/",
        ROLE,
    )


def test_a_second_start_finds_the_first_job_and_never_makes_another(tmp_path: Path) -> None:
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, started="InProgress"))
    first = world.start()
    run = world.run()

    second = world.start()

    assert second == first
    assert list(world.jobs.jobs) == [JOB_ID]
    assert world.run() == run


def test_a_run_cancelled_before_its_job_starts_ends_cancelled_without_a_job(tmp_path: Path) -> None:
    world = Training(tmp_path)
    world.change(cancel_requested=True)

    answer = world.start()

    run = world.run()
    assert (answer["status"], answer["terminal"], answer["event"]) == ("Cancelled", True, "TrainingCancelled")
    assert run.status is TrainingStatus.CANCELLED and run.finished_at is not None
    assert run.timeline[-1].message == "cancelled at the owner's request before the provider job started"
    assert world.jobs.jobs == {} and run.job_id is None


def test_starting_a_run_that_already_ended_asks_the_provider_nothing(tmp_path: Path) -> None:
    world = Training(tmp_path)
    world.runs.transition(RUN_ID, TrainingStatus.FAILED, failure_reason="refused at upload")

    answer = world.start()

    assert (answer["status"], answer["terminal"], answer["event"]) == ("Failed", True, "TrainingFailed")
    assert world.jobs.jobs == {} and world.jobs.connections == []


# ---- Poll -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "word", "status"),
    [
        (BEDROCK, "InProgress", TrainingStatus.RUNNING),
        (BEDROCK, "Completed", TrainingStatus.SUCCEEDED),
        (BEDROCK, "Stopped", TrainingStatus.CANCELLED),
        (BEDROCK, "Failed", TrainingStatus.FAILED),
        (OPENAI_COMPATIBLE, "running", TrainingStatus.RUNNING),
        (OPENAI_COMPATIBLE, "succeeded", TrainingStatus.SUCCEEDED),
        (OPENAI_COMPATIBLE, "error", TrainingStatus.FAILED),
    ],
)
def test_a_poll_records_the_status_its_kind_maps_the_providers_word_to(
    tmp_path: Path, kind: ProviderKind, word: str, status: TrainingStatus
) -> None:
    world = Training(tmp_path, kind=kind, jobs=MemoryJobs(kind, described=[word]))

    answer = world.poll(polls=2)

    assert world.run().status is status
    assert _timeline(world.run())[-1] == (status, word)
    assert (answer["status"], answer["polls"]) == (status.value, 3)


def test_a_succeeded_job_records_its_model_and_cost_and_is_announced(tmp_path: Path) -> None:
    jobs = MemoryJobs(
        BEDROCK, described=["Completed"], result_model="arn:custom/tuned", cost={"trained_tokens": 12000}
    )
    world = Training(tmp_path, jobs=jobs)

    answer = world.poll()

    run = world.run()
    assert (run.status, run.result_model, run.cost, run.job_id) == (
        TrainingStatus.SUCCEEDED,
        "arn:custom/tuned",
        {"trained_tokens": 12000},
        JOB_ID,
    )
    assert run.finished_at is not None
    assert (answer["terminal"], answer["event"], answer["result_model"]) == (
        True,
        "TrainingSucceeded",
        "arn:custom/tuned",
    )


def test_a_failed_job_fails_the_run_with_the_providers_message(tmp_path: Path) -> None:
    reason = "the training data has 3 rows: at least 8 are required"
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, described=["Failed"], failure_reason=reason))

    world.poll()

    run = world.run()
    assert (run.status, run.failure_reason, run.timeline[-1].message) == (
        TrainingStatus.FAILED,
        reason,
        reason,
    )
    assert run.result_model is None


def test_a_failed_job_without_a_reason_says_the_provider_gave_none(tmp_path: Path) -> None:
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, described=["Failed"]))

    world.poll()

    assert world.run().failure_reason == "the provider reports the job Failed without a reason"


def test_a_status_the_kind_does_not_know_counts_as_running_and_the_timeline_says_so(tmp_path: Path) -> None:
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, described=["Defrosting"]))

    world.poll()

    run = world.run()
    assert _timeline(run)[-1] == (TrainingStatus.RUNNING, "Defrosting")
    assert run.timeline[-1].message == (
        "bedrock reported status 'Defrosting', which BenchGen does not know: counted as still running until "
        "the provider reports an end"
    )


def test_a_throttled_poll_is_handed_back_to_be_retried_and_changes_nothing(tmp_path: Path) -> None:
    throttled = ProviderFault("bedrock answered ThrottlingException: slow down", retryable=True)
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, described=[throttled]))
    before = world.run()

    with pytest.raises(ProviderBusy, match=r"^bedrock answered ThrottlingException: slow down$"):
        world.poll()

    assert world.run() == before


def test_a_refused_poll_is_not_retried_and_keeps_the_providers_words(tmp_path: Path) -> None:
    refusal = ProviderFault("bedrock: ValidationException: the role cannot read the bucket", retryable=False)
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, described=[refusal]))

    with pytest.raises(ProviderFault) as raised:
        world.poll()

    assert not isinstance(raised.value, ProviderBusy)
    assert str(raised.value) == "bedrock: ValidationException: the role cannot read the bucket"


def test_polling_a_run_that_already_ended_asks_the_provider_nothing(tmp_path: Path) -> None:
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, described=["Completed"]))
    world.runs.transition(RUN_ID, TrainingStatus.CANCELLED, message=CANCELLED_BY_OWNER)

    answer = world.poll(polls=4)

    assert (answer["status"], answer["polls"]) == ("Cancelled", 5)
    assert world.jobs.described == 0


def test_a_poll_after_the_owner_asked_to_cancel_stops_the_job_and_records_cancelled(tmp_path: Path) -> None:
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, stopped="Stopping"))
    world.change(cancel_requested=True, job_id=JOB_ID)

    answer = world.poll()

    run = world.run()
    assert world.jobs.stops == [JOB_ID] and world.jobs.described == 0
    assert (run.status, run.timeline[-1].provider_status, run.timeline[-1].message) == (
        TrainingStatus.CANCELLED,
        "Stopping",
        CANCELLED_BY_OWNER,
    )
    assert answer["event"] == "TrainingCancelled"


def test_a_job_that_ended_before_the_stop_reached_it_keeps_its_end(tmp_path: Path) -> None:
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, stopped="Completed", result_model="arn:custom/tuned"))
    world.change(cancel_requested=True, job_id=JOB_ID)

    world.poll()

    run = world.run()
    assert (run.status, run.result_model) == (TrainingStatus.SUCCEEDED, "arn:custom/tuned")


# ---- TimeOut ----------------------------------------------------------------------------------------------


def test_a_job_that_outlived_its_polls_is_stopped_and_the_run_fails_saying_after_how_long(
    tmp_path: Path,
) -> None:
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, stopped="Stopping"))
    world.change(job_id=JOB_ID)

    answer = world.time_out(polls=120, poll_seconds=60)

    reason = (
        "timed out after 120 polls (about 7200 seconds) without the provider job ending; it was asked to "
        "stop (the provider reports Stopping)"
    )
    run = world.run()
    assert (run.status, run.failure_reason, run.timeline[-1].message) == (
        TrainingStatus.FAILED,
        reason,
        reason,
    )
    assert world.jobs.stops == [JOB_ID]
    assert (answer["event"], answer["polls"]) == ("TrainingFailed", 120)


def test_a_time_out_whose_stop_fails_tells_the_owner_to_stop_the_job_at_the_provider(tmp_path: Path) -> None:
    fault = ProviderFault("bedrock answered AccessDeniedException: not allowed", retryable=False)
    world = Training(tmp_path, jobs=MemoryJobs(BEDROCK, stop_fault=fault))

    world.time_out(polls=4, poll_seconds=1)

    assert world.run().failure_reason == (
        "timed out after 4 polls (about 4 seconds) without the provider job ending; asking the provider to "
        f"stop it failed (bedrock answered AccessDeniedException: not allowed): stop the job {JOB_NAME} there"
    )


def test_timing_out_a_run_that_already_ended_keeps_its_end(tmp_path: Path) -> None:
    world = Training(tmp_path)
    world.runs.transition(RUN_ID, TrainingStatus.SUCCEEDED, result_model="tuned")

    world.time_out(polls=4, poll_seconds=1)

    assert (world.run().status, world.run().failure_reason) == (TrainingStatus.SUCCEEDED, None)
    assert world.jobs.stops == []


# ---- Fail -------------------------------------------------------------------------------------------------


def test_fail_records_the_lambda_errors_message_as_the_runs_reason(tmp_path: Path) -> None:
    world = Training(tmp_path)
    cause = json.dumps(
        {
            "errorMessage": "refused: rows to upload would carry held-out test cases",
            "errorType": "TrainingRefused",
        }
    )

    answer = world.fail({"Error": "TrainingRefused", "Cause": cause})

    run = world.run()
    assert (run.status, run.failure_reason) == (
        TrainingStatus.FAILED,
        "refused: rows to upload would carry held-out test cases",
    )
    assert (answer["event"], answer["terminal"]) == ("TrainingFailed", True)


def test_fail_keeps_a_cause_that_is_not_a_lambda_error_as_it_is(tmp_path: Path) -> None:
    world = Training(tmp_path)

    world.fail({"Error": "States.Timeout", "Cause": "the task timed out after 900 seconds"})

    assert world.run().failure_reason == "the task timed out after 900 seconds"


def test_fail_without_a_cause_names_the_error(tmp_path: Path) -> None:
    world = Training(tmp_path)

    world.fail({"Error": "States.TaskFailed"})

    assert world.run().failure_reason == "States.TaskFailed"


def test_fail_leaves_a_run_that_already_ended_as_it_ended(tmp_path: Path) -> None:
    world = Training(tmp_path)
    world.runs.transition(RUN_ID, TrainingStatus.SUCCEEDED, result_model="tuned")

    answer = world.fail({"Error": "States.TaskFailed", "Cause": "late"})

    assert (world.run().status, world.run().failure_reason) == (TrainingStatus.SUCCEEDED, None)
    assert answer["event"] == "TrainingSucceeded"


def test_failing_a_run_that_is_not_recorded_is_refused(tmp_path: Path) -> None:
    world = Training(tmp_path)
    world.runs.records.clear()

    with pytest.raises(TrainingRefused, match=f"^training run {RUN_ID} is not recorded: nothing to fail$"):
        world.fail({"Error": "States.TaskFailed"})
