"""Domain records kept in DynamoDB: environment versions, runs, datasets.

A DynamoDB item holds at most 400 KB, and much of what a run records comes from its users (a program's
stderr, prediction ids, score keys). So every text, list and map a record keeps is bounded here, once:
longer values are cut with a note saying so, and the steps keep the whole text in a file the run links to.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, Field

from benchgen.inference.model import Sampling

MAX_TEXT_CHARS = 2000  # one reason, warning or problem
MAX_KEY_CHARS = 200  # one metric or breakdown key
MAX_ITEMS = 50  # entries of one list or map

_T = TypeVar("_T")


def clip_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` if it fits, else its start and how much was cut."""
    if len(text) <= limit:
        return text
    note = f" ... [{len(text) - limit} more characters cut]"
    return text[: limit - len(note)] + note


def exceeds_bounds(texts: list[str]) -> bool:
    """Whether a record would show ``texts`` cut short (too long, or too many)."""
    return len(texts) > MAX_ITEMS or any(len(text) > MAX_TEXT_CHARS for text in texts)


def _first_items(items: list[str]) -> list[str]:
    if len(items) <= MAX_ITEMS:
        return items
    return [*items[: MAX_ITEMS - 1], f"... and {len(items) - MAX_ITEMS + 1} more not shown"]


def _first_entries(limit: int) -> Callable[[dict[str, _T]], dict[str, _T]]:
    def first(entries: dict[str, _T]) -> dict[str, _T]:
        return entries if len(entries) <= limit else dict(list(entries.items())[:limit])

    return first


Text = Annotated[str, AfterValidator(clip_text)]
Key = Annotated[str, AfterValidator(lambda key: clip_text(key, MAX_KEY_CHARS))]
Texts = Annotated[list[Text], AfterValidator(_first_items)]
Scores = Annotated[dict[Key, float], AfterValidator(_first_entries(MAX_ITEMS))]
Breakdowns = Annotated[
    dict[Key, Annotated[dict[Key, dict[Key, float]], AfterValidator(_first_entries(MAX_ITEMS))]],
    AfterValidator(_first_entries(MAX_ITEMS)),
]


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
    title: Text = ""
    template: str | None = None
    has_finetune: bool = False
    bundle_key: str
    bundle_version_id: str | None = None  # the S3 object version the registration validated
    columns: list[dict[str, Any]] = Field(default_factory=list)
    phases: list[dict[str, Any]] = Field(default_factory=list)  # each phase's index and name, in order
    docker_image: str | None = None  # named by the bundle, recorded and reported as not used
    problems: Texts = Field(default_factory=list)
    warnings: Texts = Field(default_factory=list)
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


class LiveModel(BaseModel):
    """The model a live run asks, as its connection reached it when the run was created.

    References only: ``secret_arn`` names the Secrets Manager secret that holds the API key, which is
    read by the function that calls the model, when it calls it; the key itself is never kept here.
    """

    connection_id: str
    provider: str  # benchgen.providers.profiles.ProviderKind
    model_id: str
    sampling: Sampling = Field(default_factory=Sampling)
    region: str | None = None  # bedrock, sagemaker
    endpoint_name: str | None = None  # sagemaker
    messages_api: bool = False  # sagemaker: the endpoint speaks the Messages API, not {"inputs"}
    base_url: str | None = None  # openai-compatible
    secret_arn: str | None = None


class InferenceSummary(BaseModel):
    """How a live run's questions were answered; every case's detail is in its inference log."""

    cases: int = 0
    answered: int = 0
    unanswered: int = 0
    unanswered_reasons: Texts = Field(default_factory=list)  # "<case id>: <reason>", the first few


class RunClaim(BaseModel):
    """One invocation's hold on a run while it works on a step, so that concurrent deliveries do it once.

    It lapses at ``expires_at`` (the holder's deadline): a holder that died cannot block the run's retry.
    ``attempt`` counts the invocations that took the step, so the last one knows it is the last.
    """

    step: str
    holder: str
    expires_at: float  # epoch seconds
    attempt: int = Field(ge=1)


class RunRecord(BaseModel):
    run_id: str
    environment_id: str
    environment_version: str
    # None until the run starts: then the first phase, by name, unless the run named another one
    phase: str | None = None
    model: str
    owner: str
    status: RunStatus = RunStatus.PENDING
    created_at: str = Field(default_factory=utc_now)
    started_at: str | None = None
    finished_at: str | None = None
    submission_key: str | None = None
    submission_filename: str | None = None
    overall_score: float | None = None
    # Scores beyond the first MAX_ITEMS stay in the run's scores.json, breakdowns in its detailed results.
    metrics: Scores = Field(default_factory=dict)
    other_metrics: Scores = Field(default_factory=dict)
    breakdowns: Breakdowns = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    failure_reason: Text | None = None
    warnings: Texts = Field(default_factory=list)  # what ingest noticed: duplicate, unknown, missing ids
    files: dict[str, str] = Field(default_factory=dict)  # file label -> S3 key
    artifact_status: ArtifactStatus | None = None
    artifact_reason: Text | None = None
    dataset_id: str | None = None
    dataset_name: str | None = None
    execution_name: str | None = None
    run_config: RunConfig = Field(default_factory=RunConfig)
    claim: RunClaim | None = None
    live_model: LiveModel | None = None  # set when the platform generates the submission from a model
    inference: InferenceSummary | None = None


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
