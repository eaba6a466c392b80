"""The ingest step with in-memory adapters: transitions, duplicates and a retried invocation."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.storage import MissingObject
from benchgen.pipeline.ingest_step import ingest_submission
from benchgen.pipeline.keys import prediction_key
from benchgen.records import EnvironmentRecord, EnvironmentStatus, RunRecord, RunStatus
from infra.examplegen.writing import write_bundle_zip

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUNDLE_KEY = "environments/gsm8k-en/v1/bundle.zip"
SUBMISSION_KEY = "submissions/run-1/predictions.json"


class FlakyUpload(ConnectionError):
    """The network dropped during an upload."""


class MemoryStore:
    """The bucket as a dict of key -> bytes; the first `failures` uploads fail."""

    bucket = "memory"

    def __init__(self, objects: Mapping[str, bytes], failures: int = 0) -> None:
        self.objects = dict(objects)
        self.failures = failures
        self.uploads: list[str] = []

    def download(self, key: str, path: Path, *, version_id: str | None = None) -> Path:
        if key not in self.objects:
            raise MissingObject(f"{key} is not in the bucket")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.objects[key])
        return path

    def upload(self, path: Path, key: str, *, content_type: str = "") -> None:
        if self.failures:
            self.failures -= 1
            raise FlakyUpload(key)
        self.objects[key] = path.read_bytes()
        self.uploads.append(key)

    def head(self, key: str, *, version_id: str | None = None) -> dict[str, Any]:
        return {"Metadata": {}}


class MemoryRuns:
    """Runs with the repository's conditional semantics: a failed condition changes nothing."""

    def __init__(self, *runs: RunRecord) -> None:
        self.runs = {run.run_id: run for run in runs}

    def create(self, record: RunRecord) -> bool:
        return self.runs.setdefault(record.run_id, record) is record

    def get(self, run_id: str) -> RunRecord | None:
        return self.runs.get(run_id)

    def update(
        self,
        run_id: str,
        *,
        expected_status: RunStatus | Iterable[RunStatus] | None = None,
        if_unset: Iterable[str] = (),
        **fields: Any,
    ) -> bool:
        run = self.runs.get(run_id)
        if run is None:
            return False
        allowed = [expected_status] if isinstance(expected_status, RunStatus) else expected_status
        if allowed is not None and run.status not in list(allowed):
            return False
        self.runs[run_id] = run.model_copy(update=fields)
        return True

    def add_files(self, run_id: str, files: Mapping[str, str]) -> bool:
        run = self.runs[run_id]
        self.runs[run_id] = run.model_copy(update={"files": {**run.files, **files}})
        return True


class OneEnvironment:
    def get(self, environment_id: str, version: str) -> EnvironmentRecord | None:
        return EnvironmentRecord(
            environment_id=environment_id,
            version=version,
            status=EnvironmentStatus.REGISTERED,
            bundle_key=BUNDLE_KEY,
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


def test_a_pending_run_becomes_running_with_its_prediction_output(store: MemoryStore, tmp_path: Path) -> None:
    runs = MemoryRuns(pending_run())

    run = ingest_submission(
        SUBMISSION_KEY, store=store, runs=runs, environments=OneEnvironment(), workdir=tmp_path / "w"
    )

    assert run is not None and run.status is RunStatus.RUNNING
    assert run.counts["total_questions"] == 40
    assert run.files == {"Submission File": SUBMISSION_KEY, "Prediction Output": prediction_key("run-1")}
    assert store.uploads == [prediction_key("run-1")]


def test_a_second_delivery_after_the_upload_changes_nothing(store: MemoryStore, tmp_path: Path) -> None:
    runs = MemoryRuns(pending_run())
    ingest_submission(
        SUBMISSION_KEY, store=store, runs=runs, environments=OneEnvironment(), workdir=tmp_path / "a"
    )
    before = runs.get("run-1")

    again = ingest_submission(
        SUBMISSION_KEY, store=store, runs=runs, environments=OneEnvironment(), workdir=tmp_path / "b"
    )

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
        ingest_submission(
            SUBMISSION_KEY, store=store, runs=runs, environments=OneEnvironment(), workdir=tmp_path / "a"
        )
    interrupted = runs.get("run-1")
    assert interrupted is not None and interrupted.status is RunStatus.RUNNING
    assert "Prediction Output" not in interrupted.files

    # when the retry arrives
    run = ingest_submission(
        SUBMISSION_KEY, store=store, runs=runs, environments=OneEnvironment(), workdir=tmp_path / "b"
    )

    # then it completes the ingest instead of leaving the run stuck in Running
    assert run is not None and run.files["Prediction Output"] == prediction_key("run-1")
    assert store.uploads == [prediction_key("run-1")]


def test_another_submission_for_a_running_run_is_ignored(store: MemoryStore, tmp_path: Path) -> None:
    runs = MemoryRuns(
        pending_run().model_copy(
            update={"status": RunStatus.RUNNING, "submission_key": "submissions/run-1/a.json"}
        )
    )

    run = ingest_submission(
        SUBMISSION_KEY, store=store, runs=runs, environments=OneEnvironment(), workdir=tmp_path / "w"
    )

    assert run is None
    assert store.uploads == []
