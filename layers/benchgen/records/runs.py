"""Runs: what one judged submission (or live model) recorded, and the facts that name its dataset."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput, output_for_label
from benchgen.records.bounds import MAX_ITEMS, Key, Text, Texts, first_entries, first_of
from benchgen.records.environments import ShardPlan
from benchgen.records.prices import AskedMode, ModelPrices, RunCost
from benchgen.records.programs import ProgramOutcome
from benchgen.records.timestamps import utc_now
from benchgen.vocabulary import DEFAULT_BATCH_ABOVE_CASES, InferenceMode, ProviderKind, Sampling

Scores = Annotated[dict[Key, float], AfterValidator(first_entries(MAX_ITEMS))]
Breakdowns = Annotated[
    dict[Key, Annotated[dict[Key, dict[Key, float]], AfterValidator(first_entries(MAX_ITEMS))]],
    AfterValidator(first_entries(MAX_ITEMS)),
]


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


class RunConfig(LazyModel):
    """Owner-only: how the model was run."""

    sampling: dict[str, float | int | str] = Field(default_factory=dict)
    environment_variables: dict[str, str] = Field(default_factory=dict)


DEFAULT_MAX_IN_FLIGHT = 4
MAX_IN_FLIGHT = 1000


MAX_REQUESTS_PER_MINUTE = 10_000_000
MAX_TOKENS_PER_MINUTE = 1_000_000_000
LIMIT_FIELDS = ("max_in_flight", "requests_per_minute", "tokens_per_minute")


class InferenceLimits(LazyModel):
    """How hard a live run may ask its model: the provider's quotas for it, as the user states them."""

    # Strict: a bound is a number, never a string or a boolean read as one.
    model_config = ConfigDict(extra="forbid", strict=True)

    max_in_flight: int = Field(
        default=DEFAULT_MAX_IN_FLIGHT,
        ge=1,
        le=MAX_IN_FLIGHT,
        description="the most requests the model is asked at once, across every shard of the run",
    )
    requests_per_minute: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REQUESTS_PER_MINUTE,
        description="the provider's requests-per-minute quota, if any",
    )
    tokens_per_minute: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS_PER_MINUTE,
        description="the provider's tokens-per-minute quota (input and output tokens), if any",
    )


class ConnectionQuotas(LazyModel):
    """The most a connection's live runs may ask of its provider; a run's limits default to these."""

    # Strict: a bound is a number, never a string or a boolean read as one.
    model_config = ConfigDict(extra="forbid", strict=True)

    max_in_flight: int | None = Field(
        default=None, ge=1, le=MAX_IN_FLIGHT, description="the most requests in flight at once, per run"
    )
    requests_per_minute: int | None = Field(
        default=None, ge=1, le=MAX_REQUESTS_PER_MINUTE, description="the provider's requests-per-minute quota"
    )
    tokens_per_minute: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS_PER_MINUTE,
        description="the provider's tokens-per-minute quota (input and output tokens)",
    )


# How long one call to a live model may take, whole (connecting, waiting, reading the answer), before the
# case counts as unanswered for it: a long answer may take minutes, and a server that never answers must not
# hold a run past its steps' 15 minutes (see benchgen.steps.inference).
DEFAULT_MODEL_TIMEOUT_S = 60.0
MAX_MODEL_TIMEOUT_S = 300.0


class LiveModel(LazyModel):
    """The model a live run asks, as its connection reached it when the run was created.

    References only: ``secret_arn`` names the Secrets Manager secret that holds the API key, which is
    read by the function that calls the model, when it calls it; the key itself is never kept here.
    """

    connection_id: str
    provider: ProviderKind
    model_id: str
    sampling: Sampling = Field(default_factory=Sampling)
    # Where the model is reached: those of the connection's fields its kind takes (providers.connections).
    region: str | None = None
    endpoint_name: str | None = None
    messages_api: bool = False  # the endpoint speaks the Messages API, not {"inputs"}
    base_url: str | None = None
    secret_arn: str | None = None
    timeout_s: float = Field(default=DEFAULT_MODEL_TIMEOUT_S, gt=0, le=MAX_MODEL_TIMEOUT_S)
    limits: InferenceLimits = Field(default_factory=InferenceLimits)
    # The connection's prices when the run was created: later changes to the connection leave them.
    prices: ModelPrices | None = None
    inference_mode: InferenceMode = InferenceMode.AUTO
    batch_above_cases: int = Field(default=DEFAULT_BATCH_ABOVE_CASES, ge=1)


class BatchJob(LazyModel):
    """One provider batch job of a live run: the cases it carries (``first_record`` on, in the run's case
    order), the provider's id and status for it, and its record counts once the provider reports them."""

    name: str
    first_record: int = Field(ge=0)
    records: int = Field(ge=1)
    job_id: str | None = None  # None until the provider accepted it
    status: str = "NotSubmitted"
    succeeded: int | None = None
    failed: int | None = None
    message: Text | None = None


class BatchSummary(LazyModel):
    """A run's records answered by a provider's batch inference (a live run's cases, or the prompts of its
    judging pass): every job, and how many polls it took."""

    jobs: list[BatchJob] = Field(default_factory=list)
    case_shards: int = Field(default=0, ge=0)  # the shards of the run's cases Plan wrote, in case order
    polls: int = 0
    next_poll_at: str | None = Field(
        default=None,
        description="UTC time the pipeline looks at the jobs next (the wait it is in ends then); none once "
        "it has stopped looking",
    )


class InferenceProgress(LazyModel):
    """How far a live run's asking has come while it waits for its model, as its steps last reported it:
    the cases whose first call went out, those answered and those given up on, and the moment the latest
    call sent must have answered by (its connection's ``timeout_s`` after it went out)."""

    waiting_for: Text | None = None
    cases: int | None = Field(default=None, ge=0, description="the run's cases (once they are planned)")
    asked: int = Field(
        default=0,
        ge=0,
        description="cases taken up: their first call went out (or, the step's time over, none could)",
    )
    answered: int = Field(default=0, ge=0)
    unanswered: int = Field(default=0, ge=0, description="cases given up on (their reasons come at the end)")
    call_deadline: str | None = Field(
        default=None, description="UTC time by which the latest call sent must have answered, or be given up"
    )
    updated_at: str | None = None


class ShardCounts(LazyModel):
    """What one shard of a live run has asked, heard answered and given up on, as it last reported."""

    asked: int = Field(default=0, ge=0)
    answered: int = Field(default=0, ge=0)
    unanswered: int = Field(default=0, ge=0)


class InferenceSummary(LazyModel):
    """How a live run's questions were answered; every case's detail is in its inference log."""

    cases: int = 0
    answered: int = 0
    unanswered: int = 0
    unanswered_reasons: Texts = Field(default_factory=list)  # "<case id>: <reason>", the first few
    input_tokens: int = Field(default=0, description="input tokens the provider reported, over every case")
    output_tokens: int = Field(default=0, description="output tokens the provider reported, over every case")
    reasoning_tokens: int = Field(
        default=0,
        description="of the output tokens, those the provider counted as a reasoning model's reasoning "
        "(where it counts them apart); they are billed as output tokens",
    )
    cases_without_tokens: int = Field(
        default=0, description="cases with no token count from the provider (unanswered ones among them)"
    )
    cost: RunCost | None = Field(default=None, description="the reported tokens' cost; absent: see cost_note")
    cost_note: Text | None = Field(default=None, description="why the run has no cost, when it has none")


class JudgingSummary(LazyModel):
    """How the environment's judge was asked about a run's answers, apart from the run's own model: the
    judge, its calls and tokens and their cost at its connection's prices; every case's detail is in the
    run's judgments."""

    connection_id: str = Field(description="the environment owner's connection the judge was reached through")
    connection_name: str | None = Field(
        default=None, description="that connection's name, as its owner gave it"
    )
    provider: ProviderKind
    model_id: str = Field(description="the judge model")
    mode: AskedMode = Field(
        default=InferenceMode.ON_DEMAND,
        description="how the judge was asked: on demand, or through its provider's batch inference (an "
        "answer that could not be read was then asked again on demand)",
    )
    family: str | None = Field(default=None, description="the judge model's family, when known")
    same_family: bool | None = Field(
        default=None,
        description="the judge is of the judged model's own family (it may favour its kind's answers), that "
        "model's family read from a live run's model id or the run's model name (an uploaded submission's "
        "model); absent when either family cannot be told: see family_note",
    )
    family_note: Text | None = Field(
        default=None, description="which family cannot be told, when whether they are the same is not known"
    )
    cases: int = 0
    calls: int = Field(default=0, description="answers the judge gave, over every case (a retry counts)")
    judged: int = Field(default=0, description="cases whose judgment could be read")
    unreadable: int = Field(
        default=0, description="cases whose judgment could not be read, even when asked again: unjudged"
    )
    errors: int = Field(
        default=0, description="cases the judge gave no answer about (failing calls): unjudged"
    )
    unjudged_reasons: Texts = Field(default_factory=list)  # "<case id>: <reason>", the first few
    input_tokens: int = Field(default=0, description="the judge's input tokens its provider reported")
    output_tokens: int = Field(default=0, description="the judge's output tokens its provider reported")
    calls_without_tokens: int = Field(default=0, description="the judge's answers with no token count")
    cost: RunCost | None = Field(default=None, description="the judge's tokens' cost; absent: see cost_note")
    cost_note: Text | None = Field(default=None, description="why the judging has no cost, when it has none")


class RunClaim(LazyModel):
    """One invocation's hold on a run while it works on a step, so that concurrent deliveries do it once.

    It lapses at ``expires_at`` (the holder's deadline): a holder that died cannot block the run's retry.
    ``attempt`` counts the invocations that took the step, so the last one knows it is the last.
    ``request_id`` names the event the holder delivers (Lambda keeps it across an event's retries): a dead
    letter of another event leaves a run alone while this claim is live.
    """

    step: str
    holder: str
    expires_at: float  # epoch seconds
    attempt: int = Field(ge=1)
    request_id: str | None = None


class CaseScope(LazyModel):
    """The cases a run is restricted to: a JSON list of their ids in the data bucket, and how many."""

    key: str
    count: int = Field(ge=1)


def _files_by_output(files: Any) -> Any:
    """Runs stored before ``files`` was keyed by output id keyed it by label: they read the same."""
    if not isinstance(files, dict):
        return files
    return {output_for_label(name) or name: key for name, key in files.items()}


RunFiles = Annotated[dict[RunOutput, str], BeforeValidator(_files_by_output)]
# Each program keeps at most a few KB (its stderr's tail), so this many stay well inside an item's 400 KB.
MAX_PROGRAMS = 20
Programs = Annotated[list[ProgramOutcome], AfterValidator(first_of(MAX_PROGRAMS))]


class RunRecord(LazyModel):
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
    # Why a completed run has no overall score (nothing was judged): its metrics without a value are absent.
    no_score: Text | None = None
    # Scores beyond the first MAX_ITEMS stay in the run's scores.json, breakdowns in its detailed results.
    metrics: Scores = Field(default_factory=dict)
    other_metrics: Scores = Field(default_factory=dict)
    breakdowns: Breakdowns = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    failure_reason: Text | None = None
    warnings: Texts = Field(default_factory=list)  # what ingest (duplicate ids...) and scoring noticed
    # The runtime the bundle's programs run in, and why, e.g. "scientific (mapped from docker_image ...)".
    runtime: Text | None = None
    # How each bundle program that ran ended, with the end of its stderr: the traceback behind an outcome.
    programs: Programs = Field(default_factory=list)
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
    judging: JudgingSummary | None = None  # set when the environment's judge judged the answers
    # While a live run waits for its model: what it has asked and is waiting for (benchgen.steps.inference).
    progress: InferenceProgress | None = None
    # Each shard's own counts in the progress, by shard number: a retried shard replaces its counts in the
    # sums rather than adding to them.
    shard_progress: dict[str, ShardCounts] = Field(default_factory=dict)
    batch: BatchSummary | None = None  # set when the run's cases went to the provider's batch inference
    # Set when the judging pass asked the judge through its provider's batch inference.
    judging_batch: BatchSummary | None = None
    # Set for a run of chosen cases only (an evaluation's held-out cases); None: every case.
    case_scope: CaseScope | None = None
    # Set by ingest when the run is scored in shards (see benchgen.steps.shard_inputs); None: whole.
    shards: ShardPlan | None = None


class RunInfo(LazyModel):
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
