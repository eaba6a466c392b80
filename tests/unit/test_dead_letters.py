"""The dead-letter consumer's logic: what an event that failed every delivery leaves on a run or a bundle."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.aws.s3_events import uploaded_objects
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import RunClaim, RunRecord, RunStatus
from benchgen.steps.dead_letters import CLAIM_READS, DeadLetter, settle_dead_letter
from tests.fakes import MemoryEnvironments, MemoryRuns, Published

REQUEST_ID = "8e1c7a40-1f6e-4b1e-9a51-2f0d3c4b5a69"
KILLED = f"RequestId: {REQUEST_ID} Error: Runtime exited with error: signal: killed"


def s3_event(key: str, version_id: str = "3HL4kqtJlcpXroDTDmJ") -> dict[str, Any]:
    """The notification S3 sent, as the dead-letter message carries it (key URL-encoded)."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "bucket": {"name": "data"},
                    "object": {"key": key, "size": 10, "eTag": "e", "versionId": version_id},
                },
            }
        ]
    }


def letter(key: str, message: str = KILLED) -> DeadLetter:
    return DeadLetter(
        uploads=tuple(uploaded_objects(s3_event(key))),
        request_id=REQUEST_ID,
        error_code="200",
        error_message=message,
    )


def run(status: RunStatus, **fields: Any) -> RunRecord:
    return RunRecord(
        run_id="run-1",
        environment_id="gsm8k-en",
        environment_version="v1",
        model="m",
        owner="u",
        status=status,
        **fields,
    )


def settle(dead: DeadLetter, runs: MemoryRuns, environments: MemoryEnvironments | None = None) -> Published:
    published = Published()
    settle_dead_letter(
        dead,
        runs=runs,
        environments=environments or MemoryEnvironments(),
        publisher=published,
    )
    return published


@pytest.mark.parametrize(
    ("key", "step"),
    [("predictions/run-1/prediction_output.zip", "score"), ("submissions/run-1/predictions.json", "ingest")],
)
def test_a_running_run_whose_step_died_on_every_attempt_ends_failed_with_a_readable_reason(
    key: str, step: str
) -> None:
    # given a run still Running after its step was killed out of memory on every delivery
    runs = MemoryRuns(run(RunStatus.RUNNING))

    # when its event comes out of the dead-letter queue
    published = settle(letter(key), runs)

    # then the run failed, saying which step, what Lambda reported and which request to quote
    failed = runs.runs["run-1"]
    assert failed.status is RunStatus.FAILED and failed.finished_at is not None
    assert failed.failure_reason == (
        f"internal error: the {step} step failed on every attempt (request id {REQUEST_ID}), stopped before "
        "it could say why (out of memory, out of time or a crash); nothing you uploaded was changed: upload "
        "the submission again, and quote the request id if this happens again"
    )
    assert published == [("RunFailed", {"run_id": "run-1", "reason": failed.failure_reason})]


def test_a_pending_run_whose_ingest_never_started_ends_failed() -> None:
    runs = MemoryRuns(run(RunStatus.PENDING))

    settle(letter("submissions/run-1/predictions.json"), runs)

    assert runs.runs["run-1"].status is RunStatus.FAILED


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.FAILED])
def test_a_finished_run_is_left_as_it_is(status: RunStatus) -> None:
    # given a run the step finished (or failed itself, on its last attempt) before its event was dead-lettered
    finished = run(status, failure_reason="the step's own reason" if status is RunStatus.FAILED else None)
    runs = MemoryRuns(finished)

    published = settle(letter("predictions/run-1/prediction_output.zip"), runs)

    assert runs.runs["run-1"] == finished
    assert published == []


def test_a_second_copy_of_the_message_changes_nothing() -> None:
    runs = MemoryRuns(run(RunStatus.RUNNING))
    dead = letter("predictions/run-1/prediction_output.zip")
    first = settle(dead, runs)
    after_first = runs.runs["run-1"]

    second = settle(dead, runs)

    assert runs.runs["run-1"] == after_first
    assert len(first) == 1 and second == []


class TakenAfterRead(MemoryRuns):
    """Runs that a duplicate delivery claims each time the consumer has read the run, before it writes."""

    def __init__(self, record: RunRecord, takeovers: int) -> None:
        super().__init__(record)
        self.takeovers = takeovers

    def get(self, run_id: str) -> RunRecord | None:
        read = super().get(run_id)
        if read is not None and self.takeovers > 0:
            self.takeovers -= 1
            # A claim that lapsed by now, so that the consumer's next read does not see it live.
            claim = RunClaim(step="score", holder=f"h-{self.takeovers}", expires_at=0.0, attempt=1)
            self.runs[run_id] = read.model_copy(update={"claim": claim})
        return read


@pytest.mark.parametrize(("takeovers", "status"), [(1, RunStatus.FAILED), (CLAIM_READS, RunStatus.RUNNING)])
def test_a_run_another_delivery_takes_between_the_read_and_the_write_is_read_again(
    takeovers: int, status: RunStatus
) -> None:
    # given a running run that another delivery takes right after the consumer reads it, once or each time
    runs = TakenAfterRead(run(RunStatus.RUNNING), takeovers)

    # when the dead event comes out of the queue
    published = settle(letter("predictions/run-1/prediction_output.zip"), runs)

    # then a run taken once is read again and failed; one taken on every read is left to its takers
    assert runs.runs["run-1"].status is status
    assert len(published) == (1 if status is RunStatus.FAILED else 0)


def test_lambdas_error_message_stays_out_of_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    # given the last attempt's error, which names internal keys
    internal = "Execution already in progress with idempotency key: [bucket, key]=score#66580b96"
    runs = MemoryRuns(run(RunStatus.RUNNING))

    settle(letter("predictions/run-1/prediction_output.zip", internal), runs)

    reason = runs.runs["run-1"].failure_reason
    assert reason is not None and "idempotency" not in reason and REQUEST_ID in reason


def test_a_bundle_whose_registration_died_is_recorded_rejected_with_the_reason() -> None:
    # given a bundle whose registration was killed on every delivery: no version was recorded
    environments = MemoryEnvironments()

    settle(letter("environments/gsm8k-en/v2/bundle.zip"), MemoryRuns(), environments)

    # then the version is rejected, pointing at the object version that was uploaded, saying what to do
    record = environments.records[("gsm8k-en", "v2")]
    assert record.status is EnvironmentStatus.REJECTED
    assert record.bundle_key == "environments/gsm8k-en/v2/bundle.zip"
    assert record.bundle_version_id == "3HL4kqtJlcpXroDTDmJ"
    assert record.problems == [
        f"internal error: registering the bundle failed on every attempt (request id {REQUEST_ID}); the "
        "bundle is kept in the bucket: upload it again as a new version, and quote the request id if this "
        "happens again"
    ]


def test_a_version_registration_recorded_is_left_as_it_is() -> None:
    registered = EnvironmentRecord(
        environment_id="gsm8k-en",
        version="v2",
        status=EnvironmentStatus.REGISTERED,
        bundle_key="environments/gsm8k-en/v2/bundle.zip",
    )
    environments = MemoryEnvironments(registered)

    settle(letter("environments/gsm8k-en/v2/bundle.zip"), MemoryRuns(), environments)

    assert environments.records[("gsm8k-en", "v2")] == registered
