"""Evaluations: a trained model compared with its base on held-out cases, and who may ask for one."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from benchgen.lazy_model import LazyModel
from benchgen.records.bounds import Text
from benchgen.records.runs import LiveModel
from benchgen.records.timestamps import utc_now


class EvaluationGrant(LazyModel):
    """A training run's owner lets one other user evaluate it (kept in the evaluations table)."""

    training_run_id: str
    user: str  # the Cognito user id (sub) the grant names
    granted_by: str  # the training run's owner
    created_at: str = Field(default_factory=utc_now)


class EvaluationStatus(StrEnum):
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"


class EvaluatedModel(LazyModel):
    """One side of an evaluation: the model its live run calls (references only), and that run."""

    live: LiveModel
    run_id: str | None = None  # set when the run is chosen (reused) or created
    reused: bool = False  # an existing run of the base model, not one made for this evaluation


class EvaluationRecord(LazyModel):
    """A separately authorized comparison of a trained model with its base on the package's held-out cases."""

    evaluation_id: str
    owner: str  # who asked for it
    training_run_id: str
    training_owner: str
    package_id: str
    package_sha256: str
    environment_id: str
    environment_version: str
    trained_model: str | None  # the training run's result_model, as the provider named it
    tuned: EvaluatedModel
    base: EvaluatedModel
    held_out_count: int | None = None
    # Who authorized it, through what ("group evaluators" or "grant by <owner>"), and when.
    authorized_by: str
    authorized_through: str
    authorized_at: str
    status: EvaluationStatus = EvaluationStatus.RUNNING
    verdict: str | None = None  # benchgen.compare.report.Conclusion value, once Completed
    verdict_reason: Text | None = None
    accuracy_before: float | None = None
    accuracy_after: float | None = None
    paired_cases: int | None = None
    report_key: str | None = None
    report_html_key: str | None = None
    failure_reason: Text | None = None
    created_at: str = Field(default_factory=utc_now)
    finished_at: str | None = None
