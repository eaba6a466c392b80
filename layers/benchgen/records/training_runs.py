"""Training runs: one provider job over one package, followed to a terminal status."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from benchgen.lazy_model import LazyModel
from benchgen.records.bounds import Key, Text
from benchgen.records.timestamps import utc_now
from benchgen.vocabulary import Method, ProviderKind


class TrainingStatus(StrEnum):
    """A training run's status, mapped from each provider's own values (the timeline keeps those too)."""

    QUEUED = "Queued"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"


#: The statuses a training run never leaves.
TRAINING_TERMINAL = frozenset({TrainingStatus.SUCCEEDED, TrainingStatus.FAILED, TrainingStatus.CANCELLED})


class StatusChange(LazyModel):
    """One step of a training run's timeline: the mapped status, when, and what the provider said."""

    status: TrainingStatus
    at: str = Field(default_factory=utc_now)
    provider_status: str | None = None
    message: Text | None = None


class TrainingRunRecord(LazyModel):
    """One provider training job over one package: launched deliberately, followed to a terminal status."""

    training_run_id: str
    owner: str
    connection_id: str
    provider: ProviderKind
    package_id: str
    package_sha256: str
    package_profile: str
    preparation_id: str
    environment_id: str
    environment_version: str
    method: Method
    base_model: str
    base_model_source: str  # "package": recorded with the package's preparation; "request": an override
    hyperparameters: dict[Key, Text] = Field(default_factory=dict)
    # Carried from the package manifest and shown beside the configuration; never applied.
    suggested_hyperparams: dict[Key, Any] = Field(default_factory=dict)
    status: TrainingStatus = TrainingStatus.QUEUED
    timeline: list[StatusChange] = Field(default_factory=list)  # status changes only: a handful
    job_name: str  # fixed per training run, so a second start finds the first job
    job_id: str | None = None  # the provider's ARN or id
    result_model: str | None = None  # the trained model's identity, as the provider names it
    failure_reason: Text | None = None
    cost: dict[Key, float | str] = Field(default_factory=dict)  # what the provider reports, where it does
    cancel_requested: bool = False
    created_at: str = Field(default_factory=utc_now)
    finished_at: str | None = None
