"""Domain records kept in DynamoDB: environment versions, runs, datasets."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


def utc_now() -> str:
    """ISO-8601 UTC timestamp with a fixed width, so that string order is time order in sort keys."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class RunStatus(StrEnum):
    PENDING = "Pending"
    DEPLOYING = "Deploying"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"


class ArtifactStatus(StrEnum):
    PENDING = "Pending"
    NOT_EMITTED = "NotEmitted"
    SAVED = "Saved"
    FAILED = "Failed"


class EnvironmentStatus(StrEnum):
    REGISTERED = "Registered"
    REJECTED = "Rejected"


class EnvironmentRecord(BaseModel):
    environment_id: str
    version: str
    status: EnvironmentStatus
    title: str = ""
    template: str | None = None
    has_finetune: bool = False
    bundle_key: str
    bundle_version_id: str | None = None  # the S3 object version the registration validated
    columns: list[dict[str, Any]] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    # Who published it: a Cognito user id from the upload's stamp, or OPERATOR for a direct bucket upload.
    published_by: str | None = None
    created_at: str = Field(default_factory=utc_now)


class EnvironmentOwner(BaseModel):
    """Who may publish versions of one environment id: its owner, and the members of a group it names."""

    environment_id: str
    owner: str
    publisher_group: str | None = None
    created_at: str = Field(default_factory=utc_now)


class RunConfig(BaseModel):
    """Owner-only: how the model was run."""

    sampling: dict[str, float | int | str] = Field(default_factory=dict)
    environment_variables: dict[str, str] = Field(default_factory=dict)


class RunRecord(BaseModel):
    run_id: str
    environment_id: str
    environment_version: str
    phase: str = "Main"
    model: str
    owner: str
    status: RunStatus = RunStatus.PENDING
    created_at: str = Field(default_factory=utc_now)
    started_at: str | None = None
    finished_at: str | None = None
    submission_key: str | None = None
    submission_filename: str | None = None
    overall_score: float | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    other_metrics: dict[str, float] = Field(default_factory=dict)
    breakdowns: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    failure_reason: str | None = None
    warnings: list[str] = Field(default_factory=list)  # what ingest noticed: duplicate, unknown, missing ids
    files: dict[str, str] = Field(default_factory=dict)  # file label -> S3 key
    artifact_status: ArtifactStatus | None = None
    artifact_reason: str | None = None
    dataset_id: str | None = None
    dataset_name: str | None = None
    execution_name: str | None = None
    run_config: RunConfig = Field(default_factory=RunConfig)


def dataset_id_for(run_id: str) -> str:
    """One dataset per run: its id derives from the run id, so a second save collides."""
    return f"ds-{run_id}"


class DatasetRecord(BaseModel):
    dataset_id: str
    kind: str = "finetune"
    source: str = "benchmark"
    name: str
    run_id: str
    environment_id: str
    environment_version: str
    benchmark: str
    base_model: str
    selection_criterion: str
    example_count: int
    train_count: int
    validation_count: int
    test_count: int
    artifact_key: str
    artifact_sha256: str
    created_at: str = Field(default_factory=utc_now)
