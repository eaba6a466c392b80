"""The TrainingPipeline's tasks: validate a training run, upload its files, start and follow its job.

Every task reads the training run from its table and writes only through the repository's conditional
transitions, so a repeated task changes nothing and a run that reached Succeeded, Failed or Cancelled
keeps it. What a provider kind does is asked of its definition (``benchgen.providers.registry``), and
its calls go through a :class:`benchgen.ports.providers.TrainingJobs` made by ``jobs_for`` (the kind's
adapter in the functions, fakes in tests).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from benchgen.bucket_layout import training_key, training_output_prefix
from benchgen.errors import BenchGenError
from benchgen.finetune.split import Split
from benchgen.ports.connections import ConnectionsReader
from benchgen.ports.packages import PackagesReader
from benchgen.ports.providers import JobsFor, TrainingJobs
from benchgen.ports.storage import ObjectStorage
from benchgen.ports.training_runs import TrainingRunsStore
from benchgen.providers.checks import check_request
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.providers.registry import provider
from benchgen.records.bounds import clip_text
from benchgen.records.packages import PackageStatus
from benchgen.records.training_runs import TRAINING_TERMINAL, TrainingRunRecord, TrainingStatus
from benchgen.training.examples import HeldOutCase
from benchgen.training.package import MANIFEST_NAME, SPLIT_FILES
from benchgen.training.upload_guard import held_out_rows
from benchgen.vocabulary import Method

_T = TypeVar("_T")

#: The only files of a package that ever leave for a provider (and, for reinforcement, its grader).
UPLOADED_SPLITS = (Split.TRAIN, Split.VALIDATION)
#: A reinforcement package's grader: the environment's scoring as a python grader, at the package's root.
GRADER_FILE = "grader.py"
#: The event each terminal status is announced with.
TRAINING_EVENTS = {
    TrainingStatus.SUCCEEDED: "TrainingSucceeded",
    TrainingStatus.FAILED: "TrainingFailed",
    TrainingStatus.CANCELLED: "TrainingCancelled",
}
CANCELLED_BY_OWNER = "cancelled at the owner's request: the provider job was asked to stop"


class TrainingRefused(BenchGenError):
    """The training run cannot go on as recorded (its package, connection or files); the message says why."""


class ProviderBusy(BenchGenError):
    """A provider fault that may pass (throttling, a 5xx, a timeout): the state machine retries the task."""


@dataclass(frozen=True)
class JobContext:
    """What the Start, Poll and TimeOut tasks reach: the records, the provider, and the bucket it reads."""

    runs: TrainingRunsStore
    connections: ConnectionsReader
    jobs_for: JobsFor
    bucket: str


class TrainingInput(BaseModel):
    """The execution's input, as the API starts it."""

    training_run_id: str


class Uploaded(BaseModel):
    """Where the provider reads the run's files: S3 URIs, or the file ids of a provider that takes its
    files through its own upload."""

    train_uri: str
    validation_uri: str | None = None
    grader_source: str | None = None  # a reinforcement job's grader, sent with the job


class Progress(BaseModel):
    """What the Start and Poll tasks answer; the state machine's Choice reads ``terminal`` and ``polls``."""

    training_run_id: str
    status: TrainingStatus
    terminal: bool
    event: str | None = None
    polls: int = 0
    job_id: str | None = None
    result_model: str | None = None


def _record(training_run_id: str, runs: TrainingRunsStore) -> TrainingRunRecord:
    record = runs.get(training_run_id)
    if record is None:
        raise TrainingRefused(f"training run {training_run_id} is not recorded: launch it through the API")
    return record


def _connection(record: TrainingRunRecord, connections: ConnectionsReader) -> ConnectionRecord:
    connection = connections.get(record.connection_id)
    if connection is None or connection.owner != record.owner:
        raise TrainingRefused(
            f"connection {record.connection_id} was deleted after the training run was launched: "
            "launch it again with a connection of yours"
        )
    return connection


def _progress(record: TrainingRunRecord, polls: int) -> Progress:
    terminal = record.status in TRAINING_TERMINAL
    return Progress(
        training_run_id=record.training_run_id,
        status=record.status,
        terminal=terminal,
        event=TRAINING_EVENTS.get(record.status) if terminal else None,
        polls=polls,
        job_id=record.job_id,
        result_model=record.result_model,
    )


def _call(action: Callable[[], _T]) -> _T:
    """A provider call; a fault that may pass becomes :class:`ProviderBusy`, so the task is retried."""
    try:
        return action()
    except ProviderFault as fault:
        if fault.retryable:
            raise ProviderBusy(str(fault)) from fault
        raise


# ---- Validate --------------------------------------------------------------------------------------------


def validate_step(
    task: TrainingInput, *, runs: TrainingRunsStore, connections: ConnectionsReader, packages: PackagesReader
) -> dict[str, Any]:
    """Check the run against its connection's profile again: the connection or package may have changed."""
    record = _record(task.training_run_id, runs)
    connection = _connection(record, connections)
    package = packages.get(record.package_id)
    if (
        package is None
        or package.status is not PackageStatus.READY
        or package.sha256 != record.package_sha256
    ):
        raise TrainingRefused(
            f"package {record.package_id} is no longer the Ready package with sha256 {record.package_sha256} "
            "the training run was launched on: launch it again on a Ready package"
        )
    train = package.files.get(SPLIT_FILES[Split.TRAIN])
    check_request(
        connection,
        method=record.method,
        export_profile=record.package_profile,
        base_model=record.base_model,
        rows=train.rows if train is not None else None,
    )
    provider(connection.provider).check_hyperparameters(record.base_model, record.hyperparameters)
    return {"training_run_id": record.training_run_id, "provider": connection.provider}


# ---- Upload ----------------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def upload_step(
    task: TrainingInput,
    *,
    runs: TrainingRunsStore,
    connections: ConnectionsReader,
    store: ObjectStorage,
    bucket: str,
    package_key: Callable[[str], str],
    jobs_for: JobsFor,
    workdir: Path,
) -> dict[str, Any]:
    """Send the package's train and validation files, and nothing else, once no row of them carries a
    held-out case of its manifest: to ``training/<id>/`` in the data ``bucket``, or to the provider's own
    file upload where its kind takes files that way."""
    record = _record(task.training_run_id, runs)
    connection = _connection(record, connections)
    archive = store.download(package_key(record.package_id), workdir / "package.zip")
    if _sha256(archive) != record.package_sha256:
        raise TrainingRefused(
            f"package {record.package_id} in the bucket does not have the sha256 {record.package_sha256} the "
            "training run recorded: nothing was uploaded; request the package again and launch a new run"
        )
    with zipfile.ZipFile(archive) as package:
        manifest = json.loads(package.read(MANIFEST_NAME))
        held_out = [HeldOutCase.model_validate(case) for case in manifest["held_out"]["cases"]]
        names = [SPLIT_FILES[split] for split in UPLOADED_SPLITS if SPLIT_FILES[split] in package.namelist()]
        contents = {name: package.read(name) for name in names}
        grader = _grader(package, record) if record.method is Method.REINFORCEMENT else None
    problems = held_out_rows(((name, data.splitlines()) for name, data in contents.items()), held_out)
    if problems:
        raise TrainingRefused(
            f"refused: rows to upload would carry held-out test cases ({'; '.join(problems)}); "
            "nothing was uploaded: generate the preparation again, package it, and launch a new run"
        )
    if not contents.get(SPLIT_FILES[Split.TRAIN], b"").strip():
        # Checked before any upload: a file sent for a run that can never train would stay behind.
        raise TrainingRefused(
            f"package {record.package_id} has no training rows: there is nothing to train on"
        )
    uris: dict[str, str | None] = {}
    jobs = jobs_for(connection) if provider(connection.provider).uploads_files else None
    for split in UPLOADED_SPLITS:
        name = SPLIT_FILES[split]
        data = contents.get(name)
        if not data or not data.strip():
            uris[split.value] = None
            continue
        if jobs is not None:
            uris[split.value] = _call_upload(jobs, f"{record.job_name}-{name}", data)
        else:
            path = workdir / name
            path.write_bytes(data)
            key = training_key(record.training_run_id, name)
            store.upload(path, key, content_type="application/jsonl")
            uris[split.value] = f"s3://{bucket}/{key}"
    train_uri = uris[Split.TRAIN.value]
    assert train_uri is not None  # a package without training rows was refused above
    uploaded = Uploaded(
        train_uri=train_uri, validation_uri=uris[Split.VALIDATION.value], grader_source=grader
    )
    # Only a reinforcement run carries a grader through the state machine.
    return uploaded.model_dump(exclude={"grader_source"} if grader is None else None)


def _grader(package: zipfile.ZipFile, record: TrainingRunRecord) -> str:
    """The reinforcement package's grader source; refused before any upload when it has none."""
    if GRADER_FILE not in package.namelist():
        raise TrainingRefused(
            f"package {record.package_id} holds no {GRADER_FILE}: a reinforcement run sends the "
            "environment's scoring as its grader; package the reinforcement preparation with a profile "
            "that writes it (openai-rft) and launch a new run"
        )
    try:
        return package.read(GRADER_FILE).decode("utf-8")
    except UnicodeDecodeError:
        raise TrainingRefused(
            f"package {record.package_id}'s {GRADER_FILE} is not UTF-8 text: package the preparation again"
        ) from None


def _call_upload(jobs: TrainingJobs, name: str, data: bytes) -> str:
    file_id = _call(lambda: jobs.upload(name, data))
    if file_id is None:
        raise TrainingRefused(f"the provider gave no file id for {name}: launch the training run again")
    return file_id


# ---- Start, Poll, and the ways to an end -----------------------------------------------------------------


def job_spec(
    record: TrainingRunRecord, connection: ConnectionRecord, uploaded: Uploaded, bucket: str
) -> JobSpec:
    return JobSpec(
        training_run_id=record.training_run_id,
        job_name=record.job_name,
        method=record.method,
        base_model=record.base_model,
        hyperparameters=dict(record.hyperparameters),
        train_uri=uploaded.train_uri,
        validation_uri=uploaded.validation_uri,
        output_uri=f"s3://{bucket}/{training_output_prefix(record.training_run_id)}",
        role_arn=connection.role_arn,
        grader_source=uploaded.grader_source,
    )


def _apply(record: TrainingRunRecord, state: JobState, runs: TrainingRunsStore) -> None:
    """Record what the provider said: its job id, cost, and a new status with its own words."""
    if state.job_id:
        runs.record_job(record.training_run_id, job_id=state.job_id)
    if state.cost:
        runs.record_cost(record.training_run_id, state.cost)
    if state.status is record.status:
        return
    message = state.failure_reason if state.status is TrainingStatus.FAILED else state.message
    runs.transition(
        record.training_run_id,
        state.status,
        provider_status=state.provider_status,
        message=message,
        result_model=state.result_model if state.status is TrainingStatus.SUCCEEDED else None,
        failure_reason=_failure(state) if state.status is TrainingStatus.FAILED else None,
    )


def _failure(state: JobState) -> str:
    return state.failure_reason or f"the provider reports the job {state.provider_status} without a reason"


def _cancel(record: TrainingRunRecord, jobs: TrainingJobs, spec: JobSpec, runs: TrainingRunsStore) -> None:
    state = _call(lambda: jobs.stop(spec, record.job_id))
    if state.status in TRAINING_TERMINAL and state.status is not TrainingStatus.CANCELLED:
        # The job ended before the stop reached it: what it ended with is the truth.
        _apply(record, state, runs)
        return
    if state.job_id:
        runs.record_job(record.training_run_id, job_id=state.job_id)
    runs.transition(
        record.training_run_id,
        TrainingStatus.CANCELLED,
        provider_status=state.provider_status,
        message=CANCELLED_BY_OWNER,
    )


def start_step(task: TrainingInput, uploaded: Uploaded, *, on: JobContext) -> dict[str, Any]:
    """Start the provider job (a second start of the same name finds the first job)."""
    runs = on.runs
    record = _record(task.training_run_id, runs)
    if record.status in TRAINING_TERMINAL:
        return _progress(record, 0).model_dump(mode="json")
    if record.cancel_requested:
        runs.transition(
            record.training_run_id,
            TrainingStatus.CANCELLED,
            message="cancelled at the owner's request before the provider job started",
        )
        return _progress(_record(task.training_run_id, runs), 0).model_dump(mode="json")
    connection = _connection(record, on.connections)
    jobs = on.jobs_for(connection)
    spec = job_spec(record, connection, uploaded, on.bucket)
    _apply(record, _call(lambda: jobs.start(spec)), runs)
    return _progress(_record(task.training_run_id, runs), 0).model_dump(mode="json")


def poll_step(task: TrainingInput, uploaded: Uploaded, polls: int, *, on: JobContext) -> dict[str, Any]:
    """Look at the job once (or stop it, when its owner asked to cancel) and record what changed."""
    runs = on.runs
    record = _record(task.training_run_id, runs)
    if record.status not in TRAINING_TERMINAL:
        connection = _connection(record, on.connections)
        jobs = on.jobs_for(connection)
        spec = job_spec(record, connection, uploaded, on.bucket)
        if record.cancel_requested:
            _cancel(record, jobs, spec, runs)
        else:
            _apply(record, _call(lambda: jobs.describe(spec, record.job_id)), runs)
    return _progress(_record(task.training_run_id, runs), polls + 1).model_dump(mode="json")


def time_out_step(
    task: TrainingInput, uploaded: Uploaded, polls: int, poll_seconds: int, *, on: JobContext
) -> dict[str, Any]:
    """The job outlived the polls it was given: ask the provider to stop it, and record Failed."""
    runs = on.runs
    record = _record(task.training_run_id, runs)
    if record.status not in TRAINING_TERMINAL:
        reason = (
            f"timed out after {polls} polls (about {polls * poll_seconds} seconds) without the provider job "
            "ending"
        )
        connection = _connection(record, on.connections)
        spec = job_spec(record, connection, uploaded, on.bucket)
        try:
            stopped = on.jobs_for(connection).stop(spec, record.job_id)
            reason += f"; it was asked to stop (the provider reports {stopped.provider_status})"
        except ProviderFault as fault:
            reason += (
                f"; asking the provider to stop it failed ({fault}): stop the job {record.job_name} there"
            )
        runs.transition(record.training_run_id, TrainingStatus.FAILED, message=reason, failure_reason=reason)
    return _progress(_record(task.training_run_id, runs), polls).model_dump(mode="json")


def error_message(error: dict[str, Any]) -> str:
    """The sentence of a caught error: a Lambda task's Cause is its error payload as JSON."""
    cause = str(error.get("Cause") or "")
    try:
        payload = json.loads(cause)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("errorMessage"):
        return clip_text(str(payload["errorMessage"]))
    return clip_text(cause or str(error.get("Error") or "the training pipeline failed without a message"))


def fail_step(task: TrainingInput, error: dict[str, Any], *, runs: TrainingRunsStore) -> dict[str, Any]:
    """Record the run Failed with the error's message (a run already ended keeps its end)."""
    message = error_message(error)
    runs.transition(task.training_run_id, TrainingStatus.FAILED, message=message, failure_reason=message)
    record = runs.get(task.training_run_id)
    if record is None:
        raise TrainingRefused(f"training run {task.training_run_id} is not recorded: nothing to fail")
    return _progress(record, 0).model_dump(mode="json")
