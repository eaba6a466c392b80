"""The ingest step with in-memory adapters: transitions, duplicates and a retried invocation."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import benchgen.steps.ingest as ingest_step
from benchgen.bucket_layout import prediction_key
from benchgen.outputs import RunOutput
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import RunClaim, RunRecord, RunStatus
from benchgen.steps.attempts import Invocation
from benchgen.steps.ingest import ingest_submission
from examplegen.writing import write_bundle_zip
from tests.fakes import FlakyUpload, MemoryEnvironments, MemoryRuns, MemoryStore, Published

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUNDLE_KEY = "environments/gsm8k-en/v1/bundle.zip"
SUBMISSION_KEY = "submissions/run-1/predictions.json"


def delivery(attempts: int = 3) -> Invocation:
    """One invocation of the ingest function, as Lambda makes it (a fresh holder each time)."""
    return Invocation(request_id="req-ingest", deadline=time.time() + 600, attempts=attempts)


def registered() -> MemoryEnvironments:
    """The one environment version these tests know, registered."""
    return MemoryEnvironments(
        EnvironmentRecord(
            environment_id="gsm8k-en",
            version="v1",
            status=EnvironmentStatus.REGISTERED,
            bundle_key=BUNDLE_KEY,
        )
    )


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    bundle = write_bundle_zip(EXAMPLES / "gsm8k-en" / "bundle", tmp_path / "bundle.zip")
    submission = EXAMPLES / "gsm8k-en" / "submission" / "predictions.json"
    return MemoryStore({BUNDLE_KEY: bundle.read_bytes(), SUBMISSION_KEY: submission.read_bytes()})


def pending_run() -> RunRecord:
    return RunRecord(
        run_id="run-1", environment_id="gsm8k-en", environment_version="v1", model="m", owner="u"
    )


def _ingest(key: str, store: MemoryStore, runs: MemoryRuns, workdir: Path) -> RunRecord | None:
    """One delivery of ``key`` to the ingest step, for the one environment these tests know."""
    return ingest_submission(
        key,
        store=store,
        runs=runs,
        environments=registered(),
        workdir=workdir,
        invocation=delivery(),
        publisher=Published(),
    )


def test_a_pending_run_becomes_running_with_its_prediction_output(store: MemoryStore, tmp_path: Path) -> None:
    runs = MemoryRuns(pending_run())

    run = _ingest(SUBMISSION_KEY, store, runs, tmp_path / "w")

    assert run is not None and run.status is RunStatus.RUNNING
    assert run.counts["total_questions"] == 40
    assert run.files == {
        RunOutput.SUBMISSION: SUBMISSION_KEY,
        RunOutput.PREDICTION_OUTPUT: prediction_key("run-1"),
    }
    assert store.uploads == [prediction_key("run-1")]


def test_a_submission_uploaded_straight_to_the_bucket_makes_its_run_from_the_upload_metadata(
    store: MemoryStore, tmp_path: Path
) -> None:
    # given an upload made with --metadata and no run created through the API
    store.object_metadata[SUBMISSION_KEY] = {"environment": "gsm8k-en", "version": "v1", "model": "qwen"}
    runs = MemoryRuns()

    _ingest(SUBMISSION_KEY, store, runs, tmp_path / "w")

    # then the run it names exists, as the upload described it, and is ingested
    run = runs.get("run-1")
    assert run is not None and run.status is RunStatus.RUNNING
    assert (run.environment_id, run.model, run.owner) == ("gsm8k-en", "qwen", "upload")
    assert run.files[RunOutput.PREDICTION_OUTPUT] == prediction_key("run-1")


def test_a_submission_for_no_run_and_without_metadata_records_the_run_failed_saying_how_to_upload(
    store: MemoryStore, tmp_path: Path
) -> None:
    runs = MemoryRuns()

    _ingest(SUBMISSION_KEY, store, runs, tmp_path / "w")

    run = runs.get("run-1")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert run.failure_reason.startswith("run run-1 does not exist: create the run with POST /runs")
    assert store.uploads == []


def test_a_second_delivery_after_the_upload_changes_nothing(store: MemoryStore, tmp_path: Path) -> None:
    runs = MemoryRuns(pending_run())
    _ingest(SUBMISSION_KEY, store, runs, tmp_path / "a")
    before = runs.get("run-1")

    again = _ingest(SUBMISSION_KEY, store, runs, tmp_path / "b")

    assert again is None
    assert runs.get("run-1") == before
    assert store.uploads == [prediction_key("run-1")]


def test_an_invocation_retried_after_a_failed_upload_finishes_the_ingest(
    store: MemoryStore, tmp_path: Path
) -> None:
    # given an ingest whose upload of the prediction output failed (Lambda will retry the invocation)
    store.failures = 1
    runs = MemoryRuns(pending_run())
    with pytest.raises(FlakyUpload):
        _ingest(SUBMISSION_KEY, store, runs, tmp_path / "a")
    interrupted = runs.get("run-1")
    assert interrupted is not None and interrupted.status is RunStatus.RUNNING
    assert RunOutput.PREDICTION_OUTPUT not in interrupted.files

    # when the retry arrives
    run = _ingest(SUBMISSION_KEY, store, runs, tmp_path / "b")

    # then it completes the ingest instead of leaving the run stuck in Running
    assert run is not None and run.files[RunOutput.PREDICTION_OUTPUT] == prediction_key("run-1")
    assert store.uploads == [prediction_key("run-1")]


def test_another_submission_for_a_running_run_is_ignored(store: MemoryStore, tmp_path: Path) -> None:
    runs = MemoryRuns(
        pending_run().model_copy(
            update={"status": RunStatus.RUNNING, "submission_key": "submissions/run-1/a.json"}
        )
    )

    run = _ingest(SUBMISSION_KEY, store, runs, tmp_path / "w")

    assert run is None
    assert store.uploads == []


def test_an_unexpected_error_is_retried_and_the_last_attempt_fails_the_run(
    store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an ingest whose library call runs out of memory on every attempt
    calls: list[Path] = []

    def exhausted(*args: Any, **kwargs: Any) -> None:
        calls.append(args[1])
        raise MemoryError

    monkeypatch.setattr(ingest_step, "ingest", exhausted)
    runs = MemoryRuns(pending_run())

    # when Lambda delivers the event three times
    for attempt in ("a", "b"):
        with pytest.raises(MemoryError):
            _ingest(SUBMISSION_KEY, store, runs, tmp_path / attempt)
        assert runs.runs["run-1"].status is RunStatus.RUNNING
    run = _ingest(SUBMISSION_KEY, store, runs, tmp_path / "c")

    # then the third attempt failed the run with a reason naming the request, and nothing was uploaded
    assert len(calls) == 3
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason == (
        "internal error while reading the submission (MemoryError, attempt 3 of 3, request id req-ingest); "
        "nothing you uploaded was changed: upload the submission again, and quote the request id if this "
        "happens again"
    )
    assert store.uploads == []


def test_a_delivery_while_another_invocation_holds_the_run_returns_without_ingesting(
    store: MemoryStore, tmp_path: Path
) -> None:
    holding = RunClaim(step="ingest", holder="other", expires_at=time.time() + 600, attempt=1)
    runs = MemoryRuns(
        pending_run().model_copy(
            update={"status": RunStatus.RUNNING, "submission_key": SUBMISSION_KEY, "claim": holding}
        )
    )

    run = _ingest(SUBMISSION_KEY, store, runs, tmp_path / "w")

    assert run is None
    assert store.uploads == []
    assert runs.runs["run-1"].claim == holding


def test_the_last_attempt_fails_the_run_before_lambda_stops_it_for_time(
    store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an ingest that is still working when its invocation's deadline comes (here in 10.2 s)
    def stuck(*args: Any, **kwargs: Any) -> None:
        time.sleep(1.0)
        raise SystemExit("Lambda stopped the invocation")

    monkeypatch.setattr(ingest_step, "ingest", stuck)
    runs = MemoryRuns(pending_run())
    last = Invocation(request_id="req-slow", deadline=time.time() + 10.2, attempts=1)

    # when its only attempt runs
    with pytest.raises(SystemExit):
        ingest_submission(
            SUBMISSION_KEY,
            store=store,
            runs=runs,
            environments=registered(),
            workdir=tmp_path,
            invocation=last,
            publisher=Published(),
        )

    # then the run was failed before the deadline, saying it ran out of time
    run = runs.runs["run-1"]
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None and run.failure_reason.startswith(
        "internal error while reading the submission (TimeoutError, attempt 1 of 1, request id req-slow)"
    )
