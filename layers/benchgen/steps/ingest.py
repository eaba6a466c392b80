"""A submission landed: turn it into the run's prediction output."""

from __future__ import annotations

from pathlib import Path

from aws_lambda_powertools import Logger

from benchgen.bucket_layout import (
    ObjectKeyError,
    loose_run_id,
    parse_submission_key,
    prediction_key,
)
from benchgen.errors import BenchGenError
from benchgen.ingest import ingest
from benchgen.outputs import RunOutput
from benchgen.ports.environments import EnvironmentsReader
from benchgen.ports.events import Publisher
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.records.timestamps import utc_now
from benchgen.sandbox.job import Sandbox
from benchgen.steps.attempts import Invocation, take_turn
from benchgen.steps.context import open_run_environment, registered_version
from benchgen.steps.fulltext import keep_whole
from benchgen.steps.shard_inputs import shard_plan, write_shard_inputs

logger = Logger(child=True)

# Uploads made straight to the bucket (no run created through the API) name their run in object metadata.
_METADATA_HINT = (
    "create the run with POST /runs and upload to the URL it returns, or upload with "
    "--metadata environment=<id>,version=<version>,model=<name> (and phase=<name or index> for another phase "
    "than the first)"
)
_SUBMISSION_LAYOUT = "submissions/<run_id>/<file name>"
_NEW_RUN = "create a new run with POST /runs and upload to the URL it returns"
# What the bus and the log call an upload that no run takes.
SUBMISSION_REFUSED = "SubmissionRefused"


def _run_for_upload(run_id: str, metadata: dict[str, str]) -> RunRecord:
    environment = metadata.get("environment")
    version = metadata.get("version")
    model = metadata.get("model")
    if environment and version and model:
        return RunRecord(
            run_id=run_id,
            environment_id=environment,
            environment_version=version,
            model=model,
            owner="upload",
            phase=metadata.get("phase") or None,
        )
    return RunRecord(
        run_id=run_id,
        environment_id=environment or "unknown",
        environment_version=version or "unknown",
        model=model or "unknown",
        owner="upload",
        status=RunStatus.FAILED,
        finished_at=utc_now(),
        failure_reason=f"run {run_id} does not exist: {_METADATA_HINT}",
    )


def ingest_submission(
    key: str,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    environments: EnvironmentsReader,
    workdir: Path,
    invocation: Invocation,
    publisher: Publisher,
    sandbox: Sandbox | None = None,
) -> RunRecord | None:
    """Move the run Pending -> Running, build its prediction output; ``None`` for a duplicate event and
    for an upload no run takes (announced as SubmissionRefused).

    An unexpected error is raised again for Lambda to retry, except on the last attempt, which fails the run.
    """
    try:
        submission = parse_submission_key(key)
    except ObjectKeyError as error:
        return _refuse_misplaced(key, error, store=store, runs=runs, publisher=publisher)
    run_id = submission.run_id
    if runs.get(run_id) is None:
        runs.create(_run_for_upload(run_id, store.metadata(key)))
    # The run as the start left it; read again only when it did not start (a duplicate, or a resumed one).
    started = runs.start(run_id, submission_key=key, submission_filename=submission.filename)
    run = started or runs.get(run_id)
    if run is None or not (started or _interrupted(run, key)):
        if run is not None and run.submission_key != key:
            _refuse(key, _taken(run), publisher=publisher, run_id=run_id)
        else:
            logger.info("run is not pending: duplicate or late event ignored", extra={"run_id": run_id})
        return None
    claimed = run

    def work() -> RunRecord | None:
        if not started:
            logger.info("resuming an ingest that stopped before its upload", extra={"run_id": run_id})
        try:
            return _ingest_claimed(
                key,
                submission.filename,
                claimed,
                store=store,
                runs=runs,
                environments=environments,
                workdir=workdir,
                sandbox=sandbox,
            )
        except BenchGenError as error:
            logger.info("submission refused", extra={"run_id": run_id, "reason": str(error)})
            _keep_log([str(error)], run_id, store=store, runs=runs, workdir=workdir)
            return runs.fail(run_id, str(error), programs=error.programs) or runs.get(run_id)

    return take_turn(runs, claimed, step="ingest", invocation=invocation, work=work)


def _ingest_claimed(
    key: str,
    filename: str,
    run: RunRecord,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    environments: EnvironmentsReader,
    workdir: Path,
    sandbox: Sandbox | None,
) -> RunRecord | None:
    run_id = run.run_id
    runs.add_files(run_id, {RunOutput.SUBMISSION: key})
    version = registered_version(run, environments)
    env = open_run_environment(run, version, store=store, workdir=workdir / "env")
    # The run names the phase it runs from now on: a run that named none gets the first one's name.
    runs.record_phase(run_id, env.phase.name)
    local = store.download(key, workdir / "submission" / filename)
    out = workdir / "out"
    report = ingest(env, local, out, workdir=workdir / "ingest", sandbox=sandbox)
    _keep_log(report.warnings, run_id, store=store, runs=runs, workdir=workdir)
    plan = shard_plan(run, env, version)
    if plan is not None:
        write_shard_inputs(
            run_id, report.prediction_output, env.cases_path, plan, store=store, workdir=workdir / "shards"
        )
    # Recorded before the upload: the upload triggers scoring, which may finish before this returns.
    runs.record_ingest(
        run_id,
        shards=plan,
        counts=report.counts(),
        warnings=report.warnings,
        runtime=report.runtime,
        programs=report.programs,
    )
    store.upload(report.prediction_output, prediction_key(run_id), content_type="application/zip")
    return runs.add_files(run_id, {RunOutput.PREDICTION_OUTPUT: prediction_key(run_id)})


def _taken(run: RunRecord) -> str:
    """Why a run that is not waiting for a submission takes no other."""
    if run.submission_key is not None:
        state = f"already took the submission {run.submission_key} (status {run.status.value})"
    else:
        why = run.failure_reason or "no reason recorded"
        state = f"is {run.status.value}, not waiting for a submission ({why})"
    return f"run {run.run_id} {state}: a run takes one submission; {_NEW_RUN}"


def _refuse(key: str, reason: str, *, publisher: Publisher, run_id: str | None = None) -> None:
    """One log line and one SubmissionRefused event, each with the key and the reason."""
    detail = {"key": key, "reason": reason} | ({"run_id": run_id} if run_id else {})
    logger.warning("submission refused", extra=detail)
    publisher.publish(SUBMISSION_REFUSED, detail)


def _refuse_misplaced(
    key: str, error: ObjectKeyError, *, store: ObjectStorage, runs: RunsStore, publisher: Publisher
) -> RunRecord | None:
    """A submission whose key is laid out wrongly is refused on the bus and in the log, and fails the run
    its key names, if that run is pending.

    A key that names no usable run id has no run to answer on (and a run under an id the API cannot
    address would answer nobody), and a folder is not a submission: neither changes any run.
    """
    run_id = loose_run_id(key)
    if run_id is None:
        reason = f"{error}; no run can have such an id: {_NEW_RUN}"
        _refuse(key, reason, publisher=publisher)
        return None
    if key.endswith("/"):
        # A folder marker (the S3 console's "Create folder"): the file uploaded into it next is the
        # submission, so the run must still be waiting for it.
        reason = f"{key} is a folder, not a submission: upload the file itself as {_SUBMISSION_LAYOUT}"
        _refuse(key, reason, publisher=publisher, run_id=run_id)
        return None
    _refuse(key, str(error), publisher=publisher, run_id=run_id)
    existing = runs.get(run_id)
    if existing is None:
        named = _run_for_upload(run_id, store.metadata(key))
        refused = {"status": RunStatus.FAILED, "finished_at": utc_now(), "failure_reason": str(error)}
        record = RunRecord.model_validate(named.model_dump() | refused)
        return record if runs.create(record) else runs.get(run_id)
    return runs.fail(run_id, str(error), expected=RunStatus.PENDING) or existing


def _keep_log(texts: list[str], run_id: str, *, store: ObjectStorage, runs: RunsStore, workdir: Path) -> None:
    key = prediction_key(run_id, RunOutput.INGEST_LOG.file_name)
    keep_whole(
        texts,
        key=key,
        output=RunOutput.INGEST_LOG,
        run_id=run_id,
        store=store,
        runs=runs,
        workdir=workdir / "log",
    )


def _interrupted(run: RunRecord, key: str) -> bool:
    """This submission's ingest began but never uploaded its prediction output (a retried invocation).

    Only then may a Running run be ingested again; anything else is a duplicate or a second upload.
    """
    return (
        run.status is RunStatus.RUNNING
        and run.submission_key == key
        and RunOutput.PREDICTION_OUTPUT not in run.files
    )
