"""The Compare step of an evaluation: the paired comparison over both runs' verdicts on the held-out
cases, written as report.json and report.html, and the evaluation recorded Completed; or the pipeline's
caught failure recorded on it. Apart from Start and Check (`benchgen.steps.evaluation`), whose functions
need neither the comparison nor its report.
"""

from __future__ import annotations

from pathlib import Path

from benchgen.bucket_layout import evaluation_key
from benchgen.compare.report import Conclusion, RunIdentity, compare_runs
from benchgen.compare.selection import PackageRef
from benchgen.evaluation.report import REPORT_HTML, REPORT_JSON, evaluation_report, render_report
from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput
from benchgen.ports.evaluations import EvaluationsStore
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.records.timestamps import utc_now
from benchgen.steps.evaluation import EvaluationError, held_out_package, running_evaluation


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
    evaluation = running_evaluation(evaluations, evaluation_id)
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
