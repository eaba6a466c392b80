"""The steps of an evaluation, as the EvaluationPipeline state machine runs them.

Start (read the package's held-out cases; create the trained model's live run, and the base model's
unless an existing one is reused, each restricted to those cases; start their InferencePipelines) ->
Check (both runs finished?), repeated after a Wait -> Compare (`benchgen.steps.evaluation_compare`: the
paired comparison and its report, which Start and Check do not import). The state machine only waits,
branches and emits the events. Each step reads the evaluation again, and Start is safe to repeat: run
ids derive from the evaluation id, and a run or an execution that exists is left as it is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from benchgen.bucket_layout import (
    CASE_SCOPE,
    live_execution_name,
    package_key,
    run_key,
)
from benchgen.compare.selection import PackageRef, read_package
from benchgen.errors import BenchGenError
from benchgen.ports.evaluations import EvaluationsStore
from benchgen.ports.executions import Starter
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.evaluations import EvaluatedModel, EvaluationRecord, EvaluationStatus
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.steps.case_scope import write_case_scope


class EvaluationError(BenchGenError):
    """An evaluation cannot go on; the message is its failure reason."""


def running_evaluation(evaluations: EvaluationsStore, evaluation_id: str) -> EvaluationRecord:
    """The evaluation a step works on, which must be Running."""
    evaluation = evaluations.get(evaluation_id)
    if evaluation is None:
        raise EvaluationError(f"evaluation {evaluation_id} does not exist")
    if evaluation.status is not EvaluationStatus.RUNNING:
        raise EvaluationError(f"evaluation {evaluation_id} is {evaluation.status.value}, not Running")
    return evaluation


def evaluation_run_id(evaluation_id: str, side: str) -> str:
    """The id of the live run an evaluation makes for one side: fixed, so a repeated Start finds it."""
    return hashlib.sha256(f"{evaluation_id}/{side}".encode()).hexdigest()[:32]


def held_out_package(evaluation: EvaluationRecord, *, store: ObjectStorage, workdir: Path) -> PackageRef:
    """The evaluation's package, its bytes checked against the sha256 the training run recorded."""
    path = store.download(package_key(evaluation.package_id), workdir / "package.zip")
    package = read_package(path)
    if package.sha256 != evaluation.package_sha256:
        raise EvaluationError(
            f"package {evaluation.package_id} in the bucket has sha256 {package.sha256}, not the "
            f"{evaluation.package_sha256} its training run recorded: the held-out cases cannot be trusted"
        )
    if not package.held_out:
        raise EvaluationError(
            f"package {evaluation.package_id} holds out no case: there is nothing to evaluate on"
        )
    return package


def _live_run(
    evaluation: EvaluationRecord,
    side: str,
    model: EvaluatedModel,
    held_out: tuple[str, ...],
    *,
    runs: RunsStore,
    store: ObjectStorage,
    workdir: Path,
) -> str:
    run_id = evaluation_run_id(evaluation.evaluation_id, side)
    if runs.get(run_id) is None:
        scope = write_case_scope(held_out, run_key(run_id, CASE_SCOPE), store=store, workdir=workdir / side)
        runs.create(
            RunRecord(
                run_id=run_id,
                environment_id=evaluation.environment_id,
                environment_version=evaluation.environment_version,
                model=model.live.model_id,
                owner=evaluation.owner,
                live_model=model.live,
                case_scope=scope,
            )
        )
    return run_id


def start(
    evaluation_id: str,
    *,
    evaluations: EvaluationsStore,
    runs: RunsStore,
    store: ObjectStorage,
    inference: Starter,
    workdir: Path,
) -> dict[str, Any]:
    """Create (or find) the evaluation's runs and start their InferencePipelines."""
    evaluation = running_evaluation(evaluations, evaluation_id)
    held_out = held_out_package(evaluation, store=store, workdir=workdir).held_out
    tuned_run = _live_run(
        evaluation, "tuned", evaluation.tuned, held_out, runs=runs, store=store, workdir=workdir
    )
    if evaluation.base.reused and evaluation.base.run_id:
        base_run = evaluation.base.run_id
        started = [tuned_run]
    else:
        base_run = _live_run(
            evaluation, "base", evaluation.base, held_out, runs=runs, store=store, workdir=workdir
        )
        started = [tuned_run, base_run]
    evaluations.set_runs(
        evaluation_id, tuned_run_id=tuned_run, base_run_id=base_run, held_out_count=len(held_out)
    )
    for run_id in started:
        inference.start_once(live_execution_name(run_id), {"run_id": run_id})
    return {"tuned_run_id": tuned_run, "base_run_id": base_run, "held_out_count": len(held_out)}


def _finished(run: RunRecord | None, side: str, run_id: str) -> bool:
    if run is None:
        raise EvaluationError(f"the {side} run {run_id} does not exist")
    if run.status is RunStatus.FAILED:
        raise EvaluationError(f"the {side} model's run {run_id} failed: {run.failure_reason or 'no reason'}")
    return run.status is RunStatus.COMPLETED


def check(
    evaluation_id: str, polls: int, max_checks: int, *, evaluations: EvaluationsStore, runs: RunsStore
) -> dict[str, Any]:
    """Whether both runs are Completed; a failed run fails the evaluation with its reason, and so does the
    last of ``max_checks`` checks that finds them still going."""
    evaluation = running_evaluation(evaluations, evaluation_id)
    finished = True
    statuses = []
    for side, model in (("trained", evaluation.tuned), ("base", evaluation.base)):
        if model.run_id is None:
            raise EvaluationError(f"evaluation {evaluation_id} has no {side} run: it was never started")
        run = runs.get(model.run_id)
        finished = _finished(run, side, model.run_id) and finished
        statuses.append(f"the {side} model's run {model.run_id} is {run.status.value if run else 'missing'}")
    polls += 1
    if not finished and polls >= max_checks:
        raise EvaluationError(
            f"the runs did not finish within {max_checks} checks: {' and '.join(statuses)}; request the "
            "evaluation again (a completed base run is reused)"
        )
    return {"finished": finished, "polls": polls}
