"""The steps of the ShardedScoring state machine, for a run ingest cut into shards.

For each shard, in a Distributed Map: ScoreShard (judge the shard's cases against its prediction output,
upload the score part) then BuildShardArtifact (the shard's artifact examples, upload the artifact part).
Then ReduceScores merges the score parts into the run's files and completes the run exactly as the score
step completes a whole run; the artifact pipeline it starts merges the artifact parts.

Each step reads the run again rather than trusting the state machine's data. A step that fails fails the
run with a sentence naming the shard, as the score step fails a whole run, then raises ShardFailed so
that the state machine stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger

from benchgen.bucket_layout import (
    ARTIFACT_PART,
    SCORE_PART,
    case_shard_key,
    prediction_shard_key,
)
from benchgen.errors import BenchGenError
from benchgen.finetune.artifact_parts import collect_part
from benchgen.judging import JUDGMENTS_NAME
from benchgen.outputs import RunOutput
from benchgen.ports.environments import EnvironmentsReader
from benchgen.ports.events import Publisher
from benchgen.ports.executions import Starter
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.environments import ShardPlan
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.sandbox.job import Sandbox
from benchgen.scoring.score_parts import finish_scores, score_part
from benchgen.steps.context import open_run_environment, registered_version
from benchgen.steps.judging import judged_before_scoring, judgments_key
from benchgen.steps.score import complete_scoring, fail_scoring
from benchgen.steps.shard_parts import download_part, download_parts, upload_part
from benchgen.verdicts import VERDICTS_NAME

logger = Logger(child=True)


class ShardFailed(BenchGenError):
    """The run failed in one of its shard steps; the message is the run's failure reason."""


def _sharded_run(runs: RunsStore, run_id: str) -> tuple[RunRecord, ShardPlan]:
    run = runs.get(run_id)
    if run is None or run.shards is None:
        raise ShardFailed(f"run {run_id} is not scored in shards: nothing to do")
    if run.status is not RunStatus.RUNNING:
        raise ShardFailed(f"run {run_id} is {run.status.value}, no longer Running: its shards stop here")
    return run, run.shards


def shard_label(plan: ShardPlan, shard: int) -> str:
    """``shard 3 of 10 (cases 200001-300000)``: where in the run a shard's failure happened."""
    first = shard * plan.size + 1
    last = min(plan.cases, (shard + 1) * plan.size)
    return f"shard {shard + 1} of {plan.count} (cases {first}-{last})"


@contextmanager
def _failing_run(
    run_id: str, where: str, *, store: ObjectStorage, runs: RunsStore, publisher: Publisher, workdir: Path
) -> Iterator[None]:
    """Any error fails the run with a sentence starting with ``where``, then raises ShardFailed."""
    try:
        yield
    except BenchGenError as error:
        reason = f"{where}: {error}"
    except Exception as error:
        # The error's own text stays in the logs: it may quote internals the user has no use for.
        logger.exception("unexpected error in a shard step", extra={"run_id": run_id, "where": where})
        reason = (
            f"{where}: internal error ({type(error).__name__}); nothing you uploaded was changed: upload "
            "the submission again"
        )
    else:
        return
    current = runs.get(run_id)
    # Of shards failing together, the first to fail the run gives its reason and its failure log.
    if current is not None and current.status is RunStatus.RUNNING:
        out = workdir / "out"
        fail_scoring(run_id, reason, out, store=store, runs=runs, publisher=publisher, workdir=workdir)
    raise ShardFailed(reason)


def score_shard(
    run_id: str,
    shard: int,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    environments: EnvironmentsReader,
    publisher: Publisher,
    workdir: Path,
    sandbox: Sandbox | None = None,
) -> dict[str, Any]:
    """Judge one shard's cases and upload its score part."""
    run, plan = _sharded_run(runs, run_id)
    where = f"scoring {shard_label(plan, shard)}"
    with _failing_run(run_id, where, store=store, runs=runs, publisher=publisher, workdir=workdir):
        version = registered_version(run, environments)
        env = open_run_environment(run, version, store=store, workdir=workdir / "env")
        cases = store.download(
            case_shard_key(run.environment_id, run.environment_version, plan.task, shard),
            workdir / "cases.jsonl",
        )
        predictions = store.download(
            prediction_shard_key(run_id, shard), RunOutput.PREDICTION_OUTPUT.path_in(workdir)
        )
        # A run whose template asks a judge was judged whole before it was cut into shards.
        judgments = (
            store.download(judgments_key(run_id), workdir / JUDGMENTS_NAME)
            if judged_before_scoring(version)
            else None
        )
        part = workdir / "part"
        part.mkdir()
        score_part(
            env, cases, predictions, part, workdir=workdir / "score", sandbox=sandbox, judgments=judgments
        )
        upload_part(part, run_id, SCORE_PART, shard, store=store)
    return {"run_id": run_id, "shard": shard}


def build_shard_artifact(
    run_id: str,
    shard: int,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    environments: EnvironmentsReader,
    publisher: Publisher,
    workdir: Path,
) -> dict[str, Any]:
    """Collect one shard's artifact examples from its verdicts and upload its artifact part."""
    run, plan = _sharded_run(runs, run_id)
    where = f"building the finetune examples of {shard_label(plan, shard)}"
    with _failing_run(run_id, where, store=store, runs=runs, publisher=publisher, workdir=workdir):
        env = open_run_environment(
            run, registered_version(run, environments), store=store, workdir=workdir / "env"
        )
        scored = download_part(run_id, SCORE_PART, shard, store=store, folder=workdir / "score")
        cases = store.download(
            case_shard_key(run.environment_id, run.environment_version, plan.task, shard),
            workdir / "cases.jsonl",
        )
        part = workdir / "part"
        part.mkdir()
        collect_part(env, scored / VERDICTS_NAME, cases, part, run_id=run_id)
        upload_part(part, run_id, ARTIFACT_PART, shard, store=store)
    return {"run_id": run_id, "shard": shard}


def reduce_scores(
    run_id: str,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    environments: EnvironmentsReader,
    starter: Starter,
    publisher: Publisher,
    workdir: Path,
) -> dict[str, Any]:
    """Merge the score parts into the run's files and complete the run as the score step does."""
    run, plan = _sharded_run(runs, run_id)
    out = workdir / "out"
    with _failing_run(
        run_id,
        f"merging the scores of {plan.count} shards",
        store=store,
        runs=runs,
        publisher=publisher,
        workdir=workdir,
    ):
        env = open_run_environment(
            run, registered_version(run, environments), store=store, workdir=workdir / "env"
        )
        parts = download_parts(run_id, SCORE_PART, plan.count, store=store, folder=workdir / "parts")
        report = finish_scores(env, parts, out)
    completed = complete_scoring(run, report, store=store, runs=runs, starter=starter, publisher=publisher)
    status = completed.status.value if completed is not None else RunStatus.COMPLETED.value
    return {"run_id": run_id, "status": status}


def record_sharded_failure(run_id: str, reason: str, *, runs: RunsStore) -> None:
    """ShardedScoring's caught failure, a step that ended before it could say why (out of time or memory):
    the Running run fails for ``reason``. A run no longer Running keeps its outcome: the step that failed
    it wrote its own sentence, and the state machine fails either way."""
    runs.fail(run_id, reason)
