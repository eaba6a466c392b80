"""Duplicate deliveries on the local cloud: a second event for work in progress never fails the run.

S3 delivers every notification at least once, and Lambda retries a failed asynchronous invocation under
the same request id before it dead-letters the event. A duplicate that finds the first delivery still at
work ends quietly; the dead-letter consumer leaves alone a run that another delivery is at work on.
"""

from __future__ import annotations

import json
import os
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchgen.admission import check_bundle
from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.bucket_layout import execution_name
from benchgen.ingest import ingest
from benchgen.records.environments import EnvironmentStatus
from benchgen.records.runs import ArtifactStatus, RunStatus
from benchgen.scoring.engine import score_predictions
from benchgen.steps import ingest as ingest_step
from benchgen.steps import register as register_step
from benchgen.steps import score as score_step
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from tests.integration.factories import EXAMPLES, example_submission, received_events, watch_events
from tests.integration.test_pipeline import (
    Killed,
    all_datasets,
    executions,
    function_name,
    get_run,
    run_to_completion,
    s3_notification,
    table,
    upload_bundle,
)

WAIT_S = 60.0


class Held:
    """A step's work (``real``, as the step calls it), held at its start until the test lets it go, so
    that other deliveries arrive while it is at work; ``kill_first`` kills the process of the first call."""

    def __init__(self, real: Callable[..., Any], *, kill_first: bool = False) -> None:
        self.real = real
        self.kill_first = kill_first
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.calls += 1
            number = self.calls
        if self.kill_first and number == 1:
            raise Killed("out of memory")
        self.entered.set()
        assert self.release.wait(WAIT_S), "the test never let the held step go"
        return self.real(*args, **kwargs)


class Watched:
    """Every invocation of a function from now on: its request id, its event and whether it errored."""

    def __init__(self, cloud: LocalCloud, function: str) -> None:
        self.name = function_name(cloud, function)
        self.handler: Callable[[Any, Any], Any] = cloud.hook.handlers[self.name]
        self.calls: list[tuple[str, Any]] = []
        self.errors: list[str] = []
        self.running = 0
        self.last_change = time.monotonic()
        self._lock = threading.Lock()
        cloud.hook.register(self.name, self._call)

    def _call(self, event: Any, context: Any) -> Any:
        with self._lock:
            self.calls.append((context.aws_request_id, event))
            self.running += 1
            self.last_change = time.monotonic()
        try:
            return self.handler(event, context)
        except BaseException as error:
            self.errors.append(type(error).__name__)
            raise
        finally:
            with self._lock:
                self.running -= 1
                self.last_change = time.monotonic()


def wait_until_quiet(watched: list[Watched], *, running: int, calls: int, quiet_s: float = 1.0) -> None:
    """Until the functions have been called ``calls`` times, and for ``quiet_s`` (past Lambda's local retry
    delays) exactly ``running`` invocations were at work and none started or ended."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        settled = time.monotonic() - max(function.last_change for function in watched) > quiet_s
        if (
            settled
            and sum(function.running for function in watched) == running
            and sum(len(function.calls) for function in watched) >= calls
        ):
            return
        time.sleep(0.05)
    raise TimeoutError("the deliveries never came to rest")


def upload(cloud: LocalCloud, key: str, body: bytes) -> str:
    """A direct upload naming its run in object metadata; not waited for (the held ingest would block)."""
    put = cloud.client("s3").put_object(
        Bucket=cloud.bucket,
        Key=key,
        Body=body,
        Metadata={"environment": "gsm8k-en", "version": "v1", "model": "Qwen2.5-7B-LoRA"},
    )
    return str(put["VersionId"])


def test_100_deliveries_of_one_submission_while_the_first_is_at_work_end_quietly(
    cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a submission whose ingest is at work (held at its start)
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    queue = watch_events(cloud)
    held = Held(ingest)
    monkeypatch.setattr(ingest_step, "ingest", held)
    ingests = Watched(cloud, "Ingest")
    letters = Watched(cloud, "DeadLetters")
    submission = example_submission("gsm8k-en")
    key = f"submissions/run-crowd/{submission.name}"
    upload(cloud, key, submission.read_bytes())
    assert held.entered.wait(WAIT_S)

    # when S3 delivers the same notification (same version and ETag) 99 more times at once
    event = json.dumps(s3_notification(cloud, key))
    for _ in range(99):
        cloud.client("lambda").invoke(FunctionName=ingests.name, InvocationType="Event", Payload=event)
    wait_until_quiet([ingests, letters], running=1, calls=100)
    held.release.set()
    cloud.settle()

    # then every duplicate ended at its first delivery, without an error: nothing was retried or
    # dead-lettered, and the run went through once, to one execution and one dataset
    assert (len(ingests.calls), ingests.errors, letters.calls) == (100, [], [])
    assert held.calls == 1
    cloud.wait_for_execution(execution_name("run-crowd"))
    run = get_run(cloud, "run-crowd")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert len(executions(cloud)) == 1
    assert len(all_datasets(cloud)) == 1
    assert sorted(kind for kind, _ in received_events(cloud, queue)) == ["DatasetSaved", "RunCompleted"]


def test_a_dead_letter_leaves_alone_a_run_another_delivery_is_at_work_on(
    cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a submission whose first ingest is killed (its event is retried, then dead-lettered: its
    # idempotency record stays in progress), and Lambda's retries a second apart
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    queue = watch_events(cloud)
    held = Held(ingest, kill_first=True)
    monkeypatch.setattr(ingest_step, "ingest", held)
    cloud.hook.asynchronous.retry_delays_s = (1.0, 1.0)
    ingests = Watched(cloud, "Ingest")
    letters = Watched(cloud, "DeadLetters")
    submission = example_submission("gsm8k-en")
    key = f"submissions/run-again/{submission.name}"
    upload(cloud, key, submission.read_bytes())
    wait_until_quiet([ingests], running=0, calls=1, quiet_s=0.0)

    # when the submission is uploaded again before the retries come, and that upload's ingest takes the
    # run over and is still at work when the first event's dead letter arrives
    upload(cloud, key, submission.read_bytes())
    assert held.entered.wait(WAIT_S)
    wait_until_quiet([ingests, letters], running=1, calls=5)
    assert len(letters.calls) == 1
    run = get_run(cloud, "run-again")
    held.release.set()
    cloud.settle()

    # then the dead letter changed nothing, and the second upload's ingest finished the run
    assert run.status is RunStatus.RUNNING, run.failure_reason
    cloud.wait_for_execution(execution_name("run-again"))
    first_request = ingests.calls[0][0]
    assert [request for request, _ in ingests.calls].count(first_request) == 3
    completed = get_run(cloud, "run-again")
    assert completed.status is RunStatus.COMPLETED, completed.failure_reason
    assert sorted(kind for kind, _ in received_events(cloud, queue)) == ["DatasetSaved", "RunCompleted"]


def test_a_submission_uploaded_in_parts_is_announced_once_and_runs_through(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a 9 MiB submission zip (its predictions beside a notes file), which boto3 uploads in parts
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    queue = watch_events(cloud)
    ingests = Watched(cloud, "Ingest")
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.write(example_submission("gsm8k-en"), "predictions.json")
        bundle.writestr("notes.bin", os.urandom(9 * 1024 * 1024))

    # when it is uploaded as `aws s3 cp` and boto3's upload_file upload it
    cloud.client("s3").upload_file(
        str(archive),
        cloud.bucket,
        "submissions/run-parts/submission.zip",
        ExtraArgs={"Metadata": {"environment": "gsm8k-en", "version": "v1", "model": "Qwen2.5-7B-LoRA"}},
    )
    cloud.settle()

    # then S3 announced it once, as the completion of a multipart upload, and the run went through once
    names = [record["eventName"] for _, event in ingests.calls for record in event["Records"]]
    assert names == ["ObjectCreated:CompleteMultipartUpload"]
    assert ingests.errors == []
    cloud.wait_for_execution(execution_name("run-parts"))
    run = get_run(cloud, "run-parts")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert sorted(kind for kind, _ in received_events(cloud, queue)) == ["DatasetSaved", "RunCompleted"]


def test_duplicates_of_a_bundle_upload_while_it_registers_leave_it_registered(
    cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a bundle whose registration is at work (held while it checks the bundle)
    held = Held(check_bundle)
    monkeypatch.setattr(register_step, "check_bundle", held)
    registrations = Watched(cloud, "RegisterEnvironment")
    letters = Watched(cloud, "DeadLetters")
    key = "environments/gsm8k-en/v1/bundle.zip"
    archive = write_bundle_zip(EXAMPLES / "gsm8k-en" / "bundle", tmp_path / "bundle.zip")
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive.read_bytes())
    assert held.entered.wait(WAIT_S)

    # when S3 delivers its notification 20 more times meanwhile
    event = json.dumps(s3_notification(cloud, key))
    for _ in range(20):
        cloud.client("lambda").invoke(FunctionName=registrations.name, InvocationType="Event", Payload=event)
    wait_until_quiet([registrations, letters], running=1, calls=21)
    held.release.set()
    cloud.settle()

    # then the duplicates ended at once, and the version is registered, checked once
    assert (len(registrations.calls), registrations.errors, letters.calls) == (21, [], [])
    assert held.calls == 1
    record = EnvironmentsRepo(table(cloud, "Environments")).get("gsm8k-en", "v1")
    assert record is not None and record.status is EnvironmentStatus.REGISTERED, record and record.problems


def test_duplicates_of_a_prediction_output_while_it_is_scored_leave_one_completed_run(
    cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a run whose scoring is at work (held as it starts to score)
    upload_bundle(cloud, EXAMPLES / "gsm8k-en" / "bundle", tmp_path, "gsm8k-en")
    queue = watch_events(cloud)
    held = Held(score_predictions)
    monkeypatch.setattr(score_step, "score_predictions", held)
    scores = Watched(cloud, "Score")
    letters = Watched(cloud, "DeadLetters")
    submission = example_submission("gsm8k-en")
    upload(cloud, f"submissions/run-scored/{submission.name}", submission.read_bytes())
    assert held.entered.wait(WAIT_S)

    # when S3 delivers the prediction output's notification 20 more times meanwhile
    event = json.dumps(s3_notification(cloud, "predictions/run-scored/prediction_output.zip"))
    for _ in range(20):
        cloud.client("lambda").invoke(FunctionName=scores.name, InvocationType="Event", Payload=event)
    wait_until_quiet([scores, letters], running=1, calls=21)
    held.release.set()
    cloud.settle()

    # then the duplicates ended at once, and the run was scored once, to one execution and one dataset
    assert (len(scores.calls), scores.errors, letters.calls) == (21, [], [])
    assert held.calls == 1
    cloud.wait_for_execution(execution_name("run-scored"))
    run = get_run(cloud, "run-scored")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert len(executions(cloud)) == 1
    assert sorted(kind for kind, _ in received_events(cloud, queue)) == ["DatasetSaved", "RunCompleted"]


def test_a_failure_recorded_after_the_dataset_was_saved_leaves_the_run_saved(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a run whose dataset the ArtifactPipeline saved
    before = run_to_completion(cloud, tmp_path, "gsm8k-en", "run-saved")
    assert before.artifact_status is ArtifactStatus.SAVED

    # when the pipeline's failure reaches the artifact function after all, as MarkArtifactFailed sends it
    # (a failure caught after the save, in announcing it, or a failure event delivered late)
    answer = cloud.client("lambda").invoke(
        FunctionName=function_name(cloud, "BuildArtifact"),
        Payload=json.dumps({"failed": {"id": "run-saved", "reason": "the DatasetSaved event was not put"}}),
    )
    assert "FunctionError" not in answer

    # then the run keeps its saved dataset and its status
    after = get_run(cloud, "run-saved")
    assert (after.artifact_status, after.artifact_reason, after.dataset_id) == (
        ArtifactStatus.SAVED,
        before.artifact_reason,
        before.dataset_id,
    )
    assert len(all_datasets(cloud)) == 1
