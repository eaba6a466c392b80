"""The bodies of ``/training-runs/{id}/evaluation-grants``, ``/training-runs/{id}/evaluations`` and
``/evaluations``."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from benchgen.compare.report import NOT_ESTABLISHED
from benchgen.evaluation.report import EvaluationReport
from benchgen.lazy_model import LazyModel
from benchgen.records.evaluations import EvaluatedModel, EvaluationRecord, EvaluationStatus
from benchgen.requests.schemas.common import ID_PATTERN


class ModelChoice(LazyModel):
    """A model one of the caller's connections serves."""

    model_config = ConfigDict(extra="forbid")

    connection_id: str = Field(pattern=ID_PATTERN)
    model_id: str = Field(min_length=1, max_length=256, examples=["example-tuned"])


class CreateEvaluationRequest(LazyModel):
    model_config = ConfigDict(extra="forbid")

    tuned: ModelChoice | None = Field(
        default=None,
        description="the trained model to call; default: the training connection with the resulting model "
        "(openai-compatible only: Bedrock and SageMaker results must be deployed first)",
    )
    base: ModelChoice | None = Field(
        default=None, description="the base model to call; default: the tuned connection with the base model"
    )
    base_run_id: str | None = Field(
        default=None,
        pattern=ID_PATTERN,
        description="an existing Completed run of the base model to reuse (yours, same environment version, "
        "judging every held-out case); default: the newest such live run, else a new one",
    )


class GrantRequest(LazyModel):
    model_config = ConfigDict(extra="forbid")

    user: str = Field(min_length=1, max_length=128, pattern=r"^[\w-]+$", description="the user id (sub)")


class SideView(LazyModel):
    connection_id: str
    provider: str
    model_id: str = Field(description="the model id the live run calls")
    run_id: str | None
    reused: bool

    @classmethod
    def of(cls, side: EvaluatedModel) -> SideView:
        live = side.live
        return cls(
            connection_id=live.connection_id,
            provider=live.provider,
            model_id=live.model_id,
            run_id=side.run_id,
            reused=side.reused,
        )


class EvaluationView(LazyModel):
    evaluation_id: str
    status: EvaluationStatus
    training_run_id: str
    package_id: str
    package_sha256: str
    environment_id: str
    environment_version: str
    trained_model: str | None = Field(
        description="the training run's resulting model, as the provider named it"
    )
    tuned: SideView
    base: SideView
    held_out_count: int | None
    authorized_by: str
    authorized_through: str
    authorized_at: str
    verdict: str | None
    verdict_reason: str | None
    accuracy_before: float | None
    accuracy_after: float | None
    paired_cases: int | None
    failure_reason: str | None
    created_at: str
    finished_at: str | None
    notice: str = NOT_ESTABLISHED

    @classmethod
    def of(cls, record: EvaluationRecord) -> EvaluationView:
        fields = record.model_dump(exclude={"tuned", "base", "owner", "training_owner"})
        return cls(**fields, tuned=SideView.of(record.tuned), base=SideView.of(record.base))


class ReportView(LazyModel):
    report: EvaluationReport
    html_url: str = Field(description="the self-contained HTML page to download, through a short-lived URL")
    view_url: str = Field(description="the same page for a browser to show in place (a sandboxed frame)")
    expires_in: int


class EvaluationList(LazyModel):
    items: list[EvaluationView]
    next_token: str | None = None
