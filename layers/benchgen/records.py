"""Domain records kept in DynamoDB: environment versions, runs, datasets, preparations, provider
connections, packages, training runs.

A DynamoDB item holds at most 400 KB, and much of what a run records comes from its users (a program's
stderr, prediction ids, score keys). So every text, list and map a record keeps is bounded here, once:
longer values are cut with a note saying so, and the steps keep the whole text in a file the run links to.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from benchgen.bundle.spec import SelectionCriterion
from benchgen.inference.model import Sampling
from benchgen.outputs import RunOutput, output_for_label
from benchgen.providers.profiles import ConnectionProfile, ProviderKind
from benchgen.training.examples import Method

MAX_TEXT_CHARS = 2000  # one reason, warning or problem
MAX_KEY_CHARS = 200  # one metric or breakdown key
MAX_ITEMS = 50  # entries of one list or map
MAX_CRITERIA = 200  # criteria ids an environment version records

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


def _all_or_none(limit: int) -> Callable[[list[str] | None], list[str] | None]:
    """A list kept whole or not at all: a list cut short would read as complete."""

    def whole(items: list[str] | None) -> list[str] | None:
        return items if items is None or len(items) <= limit else None

    return whole


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


class ShardPlan(BaseModel):
    """How one task's cases are cut for runs scored in shards: ``count`` shards of ``size`` cases (the last
    one shorter), shard n holding the non-blank lines [n * size, (n + 1) * size) of its cases.jsonl."""

    task: int  # the task's index in competition.yaml
    cases: int = Field(ge=0)
    size: int = Field(ge=1)
    count: int = Field(ge=0)


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
    # The ids of its `criteria:`, so a preparation's scope is checked without opening the bundle; None when
    # not recorded (registered before they were, or too many to keep), and the bundle is checked instead.
    criteria: Annotated[list[Key] | None, AfterValidator(_all_or_none(MAX_CRITERIA))] = None
    docker_image: str | None = None  # named by the bundle, recorded and reported as not used
    # Each task a run may score in shards, with its cases as registration cut them at the deploy-time
    # shard size (one shard: runs of it run whole); a run of any other task runs whole.
    case_shards: list[ShardPlan] = Field(default_factory=list)
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


class CaseScope(BaseModel):
    """The cases a run is restricted to: a JSON list of their ids in the data bucket, and how many."""

    key: str
    count: int = Field(ge=1)


def _files_by_output(files: Any) -> Any:
    """Runs stored before ``files`` was keyed by output id keyed it by label: they read the same."""
    if not isinstance(files, dict):
        return files
    return {output_for_label(name) or name: key for name, key in files.items()}


RunFiles = Annotated[dict[RunOutput, str], BeforeValidator(_files_by_output)]


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
    files: RunFiles = Field(default_factory=dict)  # output -> S3 key
    artifact_status: ArtifactStatus | None = None
    artifact_reason: Text | None = None
    dataset_id: str | None = None
    dataset_name: str | None = None
    execution_name: str | None = None
    run_config: RunConfig = Field(default_factory=RunConfig)
    claim: RunClaim | None = None
    live_model: LiveModel | None = None  # set when the platform generates the submission from a model
    inference: InferenceSummary | None = None
    # Set for a run of chosen cases only (an evaluation's held-out cases); None: every case.
    case_scope: CaseScope | None = None
    # Set by ingest when the run is scored in shards (see benchgen.steps.shard_inputs); None: whole.
    shards: ShardPlan | None = None


class RunInfo(BaseModel):
    """A finished run, reduced to the facts that name and describe its dataset."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    environment_id: str
    environment_version: str
    model: str
    benchmark: str  # the benchmark's title
    overall_score: float | None  # a fraction in [0, 1], or None when the run has no primary score
    finished_at: datetime

    @classmethod
    def from_record(cls, record: RunRecord, *, benchmark: str) -> RunInfo:
        """From the stored run; a run without a finish time is dated by its creation."""
        stamp = record.finished_at or record.created_at
        return cls(
            run_id=record.run_id,
            environment_id=record.environment_id,
            environment_version=record.environment_version,
            model=record.model,
            benchmark=benchmark,
            overall_score=record.overall_score,
            finished_at=datetime.fromisoformat(stamp),
        )


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


# ---- provider connections ----------------------------------------------------------------------------------

REGION_PATTERN = r"^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$"
ROLE_ARN_PATTERN = r"^arn:aws(?:-[a-z]+)*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$"
# A pattern, not a secret: what a Secrets Manager secret's ARN looks like.
SECRET_ARN_PATTERN = (
    r"^arn:aws(?:-[a-z]+)*:secretsmanager:[a-z]{2}(?:-[a-z]+)+-\d{1,2}:\d{12}:secret:"  # noqa: S105
    r"[A-Za-z0-9/_+=.@-]{1,512}$"
)
ENDPOINT_NAME_PATTERN = r"^[A-Za-z0-9](?:-*[A-Za-z0-9]){0,62}$"
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def _base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an OpenAI-compatible base URL, or None if it can."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "base_url must be an absolute https URL, such as https://api.together.xyz/v1"
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        # A key in a URL would be stored and logged with it: keys go to Secrets Manager only.
        return (
            "base_url must hold no user name, password, query or fragment: put an API key in AWS Secrets "
            "Manager and pass its ARN as secret_arn"
        )
    host = parts.hostname
    loopback = host in _LOOPBACK_HOSTS or host.startswith("127.")
    if parts.scheme == "http" and not loopback:
        return "base_url must use https (plain http is accepted only for a server on this machine's loopback)"
    return None


class ConnectionTarget(BaseModel):
    """Where a connection reaches its provider. Keys are never part of it: only a Secrets Manager ARN."""

    name: Text = Field(min_length=1, max_length=128)
    provider: ProviderKind
    region: str | None = Field(
        default=None, pattern=REGION_PATTERN, description="bedrock and sagemaker: the AWS region"
    )
    role_arn: str | None = Field(
        default=None,
        pattern=ROLE_ARN_PATTERN,
        description="bedrock and sagemaker: the IAM role the provider assumes to train",
    )
    base_url: str | None = Field(
        default=None,
        max_length=512,
        description="openai-compatible: the API's base URL (https; http only on loopback)",
    )
    secret_arn: str | None = Field(
        default=None,
        pattern=SECRET_ARN_PATTERN,
        description="the ARN of a Secrets Manager secret holding the provider's API key (never the key)",
    )
    endpoint_name: str | None = Field(
        default=None,
        pattern=ENDPOINT_NAME_PATTERN,
        description="sagemaker: the endpoint live runs call",
    )

    @model_validator(mode="after")
    def _fits_provider(self) -> ConnectionTarget:
        aws = self.provider in (ProviderKind.BEDROCK, ProviderKind.SAGEMAKER)
        if aws:
            if self.region is None:
                raise ValueError(f"a {self.provider} connection needs its region, e.g. us-east-1")
            if self.base_url is not None:
                raise ValueError(f"a {self.provider} connection takes no base_url (openai-compatible only)")
        else:
            if self.base_url is None:
                raise ValueError(
                    "an openai-compatible connection needs base_url, e.g. https://api.together.xyz/v1"
                )
            problem = _base_url_problem(self.base_url)
            if problem is not None:
                raise ValueError(problem)
            for name in ("region", "role_arn"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"an openai-compatible connection takes no {name} (bedrock and sagemaker only)"
                    )
        if self.endpoint_name is not None and self.provider is not ProviderKind.SAGEMAKER:
            raise ValueError("endpoint_name belongs to sagemaker connections only")
        return self


class ConnectionRecord(ConnectionTarget):
    """A user's connection to a training and inference provider, with the profile it accepts."""

    connection_id: str
    owner: str
    profile: ConnectionProfile
    created_at: str = Field(default_factory=utc_now)


class PreparationStatus(StrEnum):
    GENERATING = "Generating"
    READY = "Ready"
    FAILED = "Failed"


Counts = Annotated[dict[Key, int], AfterValidator(_first_entries(MAX_ITEMS))]
Hyperparams = Annotated[dict[Key, float | int | str], AfterValidator(_first_entries(MAX_ITEMS))]
Reasons = Annotated[dict[Text, int], AfterValidator(_first_entries(MAX_ITEMS))]


class PreparationRecord(BaseModel):
    """Training material prepared from judged runs: its request, then what generating it found.

    The request fields (environment version, method, scope, selection, runs, settings) are written when it
    is created; the counts, state hash and gap count when the preparation state machine records it Ready.
    """

    preparation_id: str
    owner: str
    status: PreparationStatus = PreparationStatus.GENERATING
    environment_id: str
    environment_version: str
    method: Method
    criteria: Annotated[list[Key], AfterValidator(_first_items)] = Field(default_factory=list)
    selection: SelectionCriterion
    run_ids: list[str]
    settings: dict[str, Any] = Field(default_factory=dict)
    benchmark: Text = ""
    base_model: str
    example_count: int | None = None
    splits: Counts = Field(default_factory=dict)  # train / validation / test -> rows
    kinds: Counts = Field(default_factory=dict)  # seed / augmented / pool -> rows
    source_cases: int | None = None
    held_out_count: int | None = None
    # Why candidate rows were left out (one sentence each) -> how many; the first MAX_ITEMS reasons.
    dropped: Annotated[dict[Text, int], AfterValidator(_first_entries(MAX_ITEMS))] = Field(
        default_factory=dict
    )
    suggested_hyperparams: Hyperparams = Field(default_factory=dict)
    state_hash: str | None = None
    gap_count: int | None = None
    failure_reason: Text | None = None
    examples_key: str
    held_out_key: str
    coverage_key: str
    created_at: str = Field(default_factory=utc_now)
    finished_at: str | None = None


class PackageStatus(StrEnum):
    BUILDING = "Building"
    READY = "Ready"
    REFUSED = "Refused"  # the profile's limits refuse the preparation: the reason says which and what to do
    FAILED = "Failed"


class PackageFile(BaseModel):
    """One file of a package zip, as its manifest describes it."""

    sha256: str
    rows: int = Field(ge=0)
    bytes: int = Field(ge=0)


PackageFiles = Annotated[dict[Key, PackageFile], AfterValidator(_first_entries(MAX_ITEMS))]


class PackageRecord(BaseModel):
    """One export profile over one preparation state: its id derives from both, so a rebuild collides."""

    package_id: str
    preparation_id: str
    owner: str
    profile: str
    status: PackageStatus = PackageStatus.BUILDING
    state_hash: str
    package_key: str
    sha256: str | None = None
    size: int | None = None
    files: PackageFiles = Field(default_factory=dict)
    reason: Text | None = None  # why it was refused, or why the build failed
    # Builds started: a failed build may be asked for again, under a new execution name.
    attempt: int = Field(default=1, ge=1)
    created_at: str = Field(default_factory=utc_now)


# ---- training runs ----------------------------------------------------------------------------------------


class TrainingStatus(StrEnum):
    """A training run's status, mapped from each provider's own values (the timeline keeps those too)."""

    QUEUED = "Queued"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"


#: The statuses a training run never leaves.
TRAINING_TERMINAL = frozenset({TrainingStatus.SUCCEEDED, TrainingStatus.FAILED, TrainingStatus.CANCELLED})


class StatusChange(BaseModel):
    """One step of a training run's timeline: the mapped status, when, and what the provider said."""

    status: TrainingStatus
    at: str = Field(default_factory=utc_now)
    provider_status: str | None = None
    message: Text | None = None


class TrainingRunRecord(BaseModel):
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


# ---- evaluations ------------------------------------------------------------------------------------------


class EvaluationGrant(BaseModel):
    """A training run's owner lets one other user evaluate it (kept in the evaluations table)."""

    training_run_id: str
    user: str  # the Cognito user id (sub) the grant names
    granted_by: str  # the training run's owner
    created_at: str = Field(default_factory=utc_now)


class EvaluationStatus(StrEnum):
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"


class EvaluatedModel(BaseModel):
    """One side of an evaluation: the model its live run calls (references only), and that run."""

    live: LiveModel
    run_id: str | None = None  # set when the run is chosen (reused) or created
    reused: bool = False  # an existing run of the base model, not one made for this evaluation


class EvaluationRecord(BaseModel):
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
