"""The evaluation report: the paired comparison of the base and the trained model on the package's held-out
cases, with the identities that make it checkable (package id and sha256, the trained model as the provider
named it, and the model id each live run called) and who authorized it."""

from __future__ import annotations

from benchgen.compare.html import render_comparison
from benchgen.compare.report import NOT_ESTABLISHED, Comparison
from benchgen.lazy_model import LazyModel
from benchgen.records.evaluations import EvaluatedModel, EvaluationRecord

REPORT_JSON = "report.json"
REPORT_HTML = "report.html"


class ModelIdentity(LazyModel):
    """One side as the report names it."""

    run_id: str
    connection_id: str
    provider: str
    model_called: str  # the model id the live run called
    reused_run: bool


class EvaluationReport(LazyModel):
    evaluation_id: str
    training_run_id: str
    package_id: str
    package_sha256: str
    environment_id: str
    environment_version: str
    trained_model: str | None  # the training run's result_model, as the provider named it
    tuned: ModelIdentity
    base: ModelIdentity
    authorized_by: str
    authorized_through: str
    authorized_at: str
    notice: str = NOT_ESTABLISHED
    comparison: Comparison


def _identity(side: EvaluatedModel) -> ModelIdentity:
    if side.run_id is None:
        raise ValueError("the evaluation's runs are not chosen yet: there is nothing to report")
    return ModelIdentity(
        run_id=side.run_id,
        connection_id=side.live.connection_id,
        provider=side.live.provider,
        model_called=side.live.model_id,
        reused_run=side.reused,
    )


def evaluation_report(evaluation: EvaluationRecord, comparison: Comparison) -> EvaluationReport:
    return EvaluationReport(
        evaluation_id=evaluation.evaluation_id,
        training_run_id=evaluation.training_run_id,
        package_id=evaluation.package_id,
        package_sha256=evaluation.package_sha256,
        environment_id=evaluation.environment_id,
        environment_version=evaluation.environment_version,
        trained_model=evaluation.trained_model,
        tuned=_identity(evaluation.tuned),
        base=_identity(evaluation.base),
        authorized_by=evaluation.authorized_by,
        authorized_through=evaluation.authorized_through,
        authorized_at=evaluation.authorized_at,
        comparison=comparison,
    )


def render_report(report: EvaluationReport) -> str:
    """The comparison page, with the evaluation's identities under the two runs."""
    reused = " (an existing run, reused)" if report.base.reused_run else ""
    details = [
        ("Evaluation", report.evaluation_id),
        ("Training run", report.training_run_id),
        ("Trained model (as the provider named it)", report.trained_model or "not reported"),
        ("Model id called for the trained model", f"{report.tuned.model_called} via {report.tuned.provider}"),
        (
            "Model id called for the base model",
            f"{report.base.model_called} via {report.base.provider}{reused}",
        ),
        (
            "Authorized",
            f"by {report.authorized_by} through {report.authorized_through} at {report.authorized_at}",
        ),
    ]
    return render_comparison(report.comparison, details=details)
