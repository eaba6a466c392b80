"""The steps of an evaluation, as the EvaluationPipeline state machine runs them.

Start (read the package's held-out cases; create the trained model's live run, and the base model's
unless an existing one is reused, each restricted to those cases; start their InferencePipelines) ->
Check (both runs finished?), repeated after a Wait -> Compare (the paired comparison over both runs'
verdicts, written as report.json and report.html, and the evaluation recorded Completed). Compare also
records the pipeline's caught failure; the state machine only waits, branches and emits the events. Each
step reads the evaluation again, and Start is safe to repeat: run ids derive from the evaluation id, and
a run or an execution that exists is left as it is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from benchgen.bucket_layout import (
    CASE_SCOPE,
    evaluation_key,
    live_execution_name,
    package_key,
    run_key,
)
from benchgen.compare.report import Conclusion, RunIdentity, compare_runs
from benchgen.compare.selection import PackageRef, read_package
from benchgen.errors import BenchGenError
from benchgen.evaluation.report import REPORT_HTML, REPORT_JSON, evaluation_report, render_report
from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput
from benchgen.ports.evaluations import EvaluationsStore
from benchgen.ports.executions import Starter
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.evaluations import EvaluatedModel, EvaluationRecord, EvaluationStatus
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.records.timestamps import utc_now
from benchgen.steps.case_scope import write_case_scope


class Compared(LazyModel):
    """What Compare found, as the evaluation records it (each a field of the record), and where its
    report is."""

    verdict: Conclusion
    verdict_reason: str
    accuracy_before: float
    accuracy_after: float
    paired_cases: int
    report_key: str
    report_html_key: str


class EvaluationError(BenchGenError):
    """An evaluation cannot go on; the message is its failure reason."""


def _evaluation(evaluations: EvaluationsStore, evaluation_id: str) -> EvaluationRecord:
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
    evaluation = _evaluation(evaluations, evaluation_id)
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
    evaluation = _evaluation(evaluations, evaluation_id)
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


def _scoring_output(run: RunRecord | None, side: str, *, store: ObjectStorage, workdir: Path) -> Path:
    key = run.files.get(RunOutput.SCORING_OUTPUT) if run else None
    if run is None or run.status is not RunStatus.COMPLETED or key is None:
        raise EvaluationError(f"the {side} model's run has no scoring output to compare")
    return store.download(key, RunOutput.SCORING_OUTPUT.path_in(workdir / side))


def _identity(run: RunRecord, package: PackageRef) -> RunIdentity:
    """The run as the report names it; the benchmark's title is the one the package's preparation recorded
    (the environment both runs judged: the runs themselves do not record it)."""
    return RunIdentity(
        run_id=run.run_id, model=run.model, benchmark=package.benchmark, environment_id=run.environment_id
    )


def compare(
    evaluation_id: str, *, evaluations: EvaluationsStore, runs: RunsStore, store: ObjectStorage, workdir: Path
) -> Compared:
    """Compare both runs on the held-out cases, write the report, and record the evaluation Completed."""
    evaluation = _evaluation(evaluations, evaluation_id)
    package = held_out_package(evaluation, store=store, workdir=workdir)
    tuned_run = runs.get(evaluation.tuned.run_id or "")
    base_run = runs.get(evaluation.base.run_id or "")
    base_scoring = _scoring_output(base_run, "base", store=store, workdir=workdir)
    tuned_scoring = _scoring_output(tuned_run, "trained", store=store, workdir=workdir)
    assert tuned_run is not None and base_run is not None
    comparison = compare_runs(
        _identity(base_run, package),
        base_scoring,
        _identity(tuned_run, package),
        tuned_scoring,
        cases=list(package.held_out),
        package=package,
    )
    report = evaluation_report(evaluation, comparison)
    out = workdir / "report"
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_JSON).write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    (out / REPORT_HTML).write_text(render_report(report), encoding="utf-8")
    json_key = evaluation_key(evaluation_id, REPORT_JSON)
    html_key = evaluation_key(evaluation_id, REPORT_HTML)
    store.upload(out / REPORT_JSON, json_key, content_type="application/json")
    store.upload(out / REPORT_HTML, html_key, content_type="text/html; charset=utf-8")
    compared = Compared(
        verdict=comparison.verdict,
        verdict_reason=comparison.verdict_reason,
        accuracy_before=comparison.accuracy_before,
        accuracy_after=comparison.accuracy_after,
        paired_cases=comparison.paired_cases,
        report_key=json_key,
        report_html_key=html_key,
    )
    if not evaluations.complete(evaluation_id, found=compared.model_dump(mode="json"), finished_at=utc_now()):
        raise _not_running(evaluation_id, "Completed")
    return compared


def record_evaluation_failure(evaluation_id: str, reason: str, *, evaluations: EvaluationsStore) -> None:
    """The pipeline's caught failure: Running -> Failed with ``reason``."""
    if not evaluations.fail(evaluation_id, reason=reason, finished_at=utc_now()):
        raise _not_running(evaluation_id, f"Failed ({reason})")


def _not_running(evaluation_id: str, outcome: str) -> EvaluationError:
    return EvaluationError(
        f"evaluation {evaluation_id} is no longer Running, so it is not recorded {outcome}: it keeps what "
        "it was recorded with first"
    )
