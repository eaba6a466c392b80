"""A prediction output landed: score it, publish the run's files, start the artifact state machine."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aws_lambda_powertools import Logger

from benchgen.bucket_layout import (
    ObjectKeyError,
    execution_name,
    judging_execution_name,
    parse_prediction_key,
    run_key,
    shard_items_key,
    sharded_execution_name,
)
from benchgen.errors import BenchGenError
from benchgen.judging import JUDGMENTS_NAME
from benchgen.outputs import RunOutput
from benchgen.ports.environments import EnvironmentsReader
from benchgen.ports.events import Publisher
from benchgen.ports.executions import Starter
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.environments import EnvironmentRecord
from benchgen.records.programs import ProgramOutcome
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.sandbox.job import Sandbox
from benchgen.scoring.engine import ScoreReport, score_predictions
from benchgen.steps.attempts import Invocation, take_turn
from benchgen.steps.context import checked_version, open_run_environment
from benchgen.steps.fulltext import keep_whole
from benchgen.steps.judging import judged_before_scoring, judgments_key

logger = Logger(child=True)

# What a browser is told each run file is, by its suffix: the reports open in place, the archives download.
CONTENT_TYPES = {
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
    ".zip": "application/zip",
    ".log": "text/plain; charset=utf-8",
}


def content_type_for(path: Path) -> str:
    return CONTENT_TYPES.get(path.suffix, "application/octet-stream")


def _start_artifact(run_id: str, starter: Starter) -> None:
    if not starter.start_once(execution_name(run_id), {"run_id": run_id}):
        logger.info("artifact execution already started", extra={"run_id": run_id})


def score_run(
    key: str,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    environments: EnvironmentsReader,
    starter: Starter,
    publisher: Publisher,
    workdir: Path,
    invocation: Invocation,
    sandbox: Sandbox | None = None,
    sharded_starter: Starter | None = None,
    judging_starter: Starter | None = None,
) -> RunRecord | None:
    """Score the run once; a duplicate event only makes sure the state machine was started.

    A run whose environment's template asks a judge is first handed to the JudgingPipeline state machine
    (``judging_starter``), which has this step score it once the run's judgments are written.

    A run ingest cut into shards is handed to the ShardedScoring state machine (``sharded_starter``)
    instead, whose last step completes it as :func:`complete_scoring` does here.

    Of concurrent deliveries, the one that claims the run scores it and the others return at once. An
    unexpected error is raised again for Lambda to retry, except on the last attempt, which fails the run.
    """
    try:
        run_id = parse_prediction_key(key)
    except ObjectKeyError as error:
        # Only the ingest function writes here, so this is no user's upload: an error for the operator.
        logger.error("prediction output at a key laid out wrongly: ignored", extra={"reason": str(error)})
        return None
    run = runs.get(run_id)
    if run is None:
        logger.error("prediction output for an unknown run", extra={"key": key})
        return None
    if run.status is RunStatus.COMPLETED:
        _start_artifact(run_id, starter)
        return None
    if run.status is not RunStatus.RUNNING:
        logger.info("run is not running: event ignored", extra={"run_id": run_id, "status": run.status})
        return None
    # The version is read once for the step: whether the run is judged first, and its environment.
    version = environments.get(run.environment_id, run.environment_version)
    judged = judged_before_scoring(version)
    if judged and store.size(judgments_key(run_id)) is None:
        if judging_starter is None:
            raise RuntimeError("JUDGING_STATE_MACHINE_ARN is not set: a judged run cannot be judged")
        if not judging_starter.start_once(judging_execution_name(run_id), {"run_id": run_id}):
            logger.info("judging already started", extra={"run_id": run_id})
        return run
    return take_turn(
        runs,
        run,
        step="score",
        invocation=invocation,
        publisher=publisher,
        work=lambda: _score_claimed(
            key,
            run,
            store=store,
            runs=runs,
            version=version,
            starter=starter,
            publisher=publisher,
            workdir=workdir,
            sandbox=sandbox,
            sharded_starter=sharded_starter,
            judged=judged,
        ),
    )


def _score_claimed(
    key: str,
    run: RunRecord,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    version: EnvironmentRecord | None,
    starter: Starter,
    publisher: Publisher,
    workdir: Path,
    sandbox: Sandbox | None,
    sharded_starter: Starter | None,
    judged: bool,
) -> RunRecord | None:
    run_id = run.run_id
    out = workdir / "out"
    if run.shards is not None:
        if sharded_starter is None:
            raise RuntimeError("SHARDED_SCORING_STATE_MACHINE_ARN is not set: a sharded run cannot be scored")
        payload = {"run_id": run_id, "items_key": shard_items_key(run_id)}
        if not sharded_starter.start_once(sharded_execution_name(run_id), payload):
            logger.info("sharded scoring already started", extra={"run_id": run_id})
        return run
    try:
        env = open_run_environment(run, checked_version(run, version), store=store, workdir=workdir / "env")
        local = store.download(key, RunOutput.PREDICTION_OUTPUT.path_in(workdir))
        judgments = store.download(judgments_key(run_id), workdir / JUDGMENTS_NAME) if judged else None
        report = score_predictions(
            env,
            local,
            out,
            workdir=workdir / "score",
            sandbox=sandbox,
            earlier=run.programs,
            judgments=judgments,
        )
    except BenchGenError as error:
        return fail_scoring(
            run_id,
            str(error),
            out,
            store=store,
            runs=runs,
            publisher=publisher,
            workdir=workdir,
            programs=[*run.programs, *error.programs],
        )
    return complete_scoring(run, report, store=store, runs=runs, starter=starter, publisher=publisher)


def fail_scoring(
    run_id: str,
    reason: str,
    out: Path,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    publisher: Publisher,
    workdir: Path,
    programs: Sequence[ProgramOutcome] | None = None,
) -> RunRecord | None:
    """Fail the Running run for ``reason``: its scoring log (if ``out`` holds one) and the whole reason are
    kept as run files, how every program ended (``programs``, when known) on the run, and RunFailed is
    announced."""
    # Scoring failed, so no report names the log: it is where the engine writes it.
    log = RunOutput.SCORING_LOG.path_in(out)
    if log.exists():
        log_key = run_key(run_id, RunOutput.SCORING_LOG.file_name)
        store.upload(log, log_key, content_type=content_type_for(log))
        runs.add_files(run_id, {RunOutput.SCORING_LOG: log_key})
    keep_whole(
        [reason],
        key=run_key(run_id, RunOutput.FAILURE_LOG.file_name),
        output=RunOutput.FAILURE_LOG,
        run_id=run_id,
        store=store,
        runs=runs,
        workdir=workdir / "log",
    )
    failed = runs.fail(run_id, reason, programs=programs)
    if failed is None:
        # It finished meanwhile (another delivery, another shard): what it is now.
        return runs.get(run_id)
    publisher.publish("RunFailed", {"run_id": run_id, "reason": reason})
    return failed


def complete_scoring(
    run: RunRecord,
    report: ScoreReport,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    starter: Starter,
    publisher: Publisher,
) -> RunRecord | None:
    """Publish the run files the report names, complete the Running run with the report, start its artifact
    pipeline and announce RunCompleted; ``None`` when another delivery completed it first."""
    run_id = run.run_id
    files: dict[RunOutput, str] = {}
    for output, path in report.files.items():
        # A completed run's program logs are in its scoring output (logs/): the separate scoring log is
        # kept only to show why a run failed.
        if output is RunOutput.SCORING_LOG:
            continue
        file_key = run_key(run_id, output.file_name)
        store.upload(path, file_key, content_type=content_type_for(path))
        files[output] = file_key
    runs.add_files(run_id, files)
    completed = runs.complete(
        run_id,
        overall_score=report.overall_score,
        no_score=report.no_score,
        metrics=report.metrics,
        other_metrics=report.other_metrics,
        breakdowns=report.breakdowns,
        # ingest recorded its counts before uploading the prediction output that triggered this step
        counts={**run.counts, **report.counts()},
        execution_name=execution_name(run_id),
        warnings=[*run.warnings, *report.warnings],
        programs=[*run.programs, *report.programs],
    )
    if not completed:
        logger.info("another delivery completed the run first", extra={"run_id": run_id})
        return None
    _start_artifact(run_id, starter)
    publisher.publish(
        "RunCompleted",
        {"run_id": run_id, "environment_id": run.environment_id, "overall_score": report.overall_score},
    )
    return completed
