"""The bodies of ``/runs``, a live run's model configuration among them."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictStr,
    WithJsonSchema,
    computed_field,
    field_validator,
    model_validator,
)

from benchgen.lazy_model import LazyModel
from benchgen.records.judge_calibration import JudgeAgreement
from benchgen.records.prices import ModelPrices
from benchgen.records.programs import ProgramOutcome
from benchgen.records.runs import (
    ArtifactStatus,
    BatchSummary,
    InferenceLimits,
    InferenceProgress,
    InferenceSummary,
    JudgingSummary,
    RunConfig,
    RunRecord,
    RunStatus,
)
from benchgen.requests.schemas.common import MAX_REQUEST_NUMBER, Listing, StrictRequest, Text, matching
from benchgen.requests.schemas.environments import EnvironmentId, Version
from benchgen.vocabulary import DEFAULT_BATCH_ABOVE_CASES, InferenceMode, Sampling

FILENAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.(?:json|jsonl|zip)$"
SAMPLING_KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
VARIABLE_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
#: Bounds of a run configuration; together they cap it at about 42,000 characters (see RunConfigRequest).
MAX_SAMPLING_ENTRIES = 16
MAX_SAMPLING_TEXT = 256
MAX_VARIABLES = 32
MAX_VARIABLE_VALUE = 1024
SAMPLING_DECIMALS = 12
SECRETS_MANAGER_ARN = r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@!-]+$"
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# Names that say their value is a credential, and values shaped like the keys providers hand out.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_KEY_SHAPED = re.compile(r"^(sk-|hf_|AKIA|ASIA|ghp_|gho_|xox[bp]-|Bearer\s)|^[A-Za-z0-9_\-]{32,}$")


SubmissionFilename = Annotated[
    str,
    Field(json_schema_extra={"pattern": FILENAME_PATTERN}, examples=["predictions.zip"]),
    AfterValidator(
        matching(
            FILENAME_PATTERN,
            "must be letters, digits, '.', '_' and '-' only, ending in .json, .jsonl or .zip",
        )
    ),
]


def _sampling_value(value: object) -> int | float | str:
    """A number within ±1e12 (floats kept to 12 decimals: 1e-200 is valid JSON but no DynamoDB number),
    or text of at most 256 characters; booleans and anything else are refused, as the document says."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_REQUEST_NUMBER:
        return value
    if isinstance(value, float) and abs(value) <= MAX_REQUEST_NUMBER:  # NaN and infinities fail this too
        return round(value, SAMPLING_DECIMALS)
    if isinstance(value, str) and len(value) <= MAX_SAMPLING_TEXT:
        return value
    raise ValueError(
        f"must be a number between -{MAX_REQUEST_NUMBER:.0e} and {MAX_REQUEST_NUMBER:.0e}, "
        f"or text of at most {MAX_SAMPLING_TEXT} characters"
    )


SamplingValue = Annotated[
    int | float | str,
    PlainValidator(_sampling_value),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": -MAX_REQUEST_NUMBER, "maximum": MAX_REQUEST_NUMBER},
                {"type": "string", "maxLength": MAX_SAMPLING_TEXT},
            ]
        }
    ),
]
SamplingKey = Annotated[str, Field(pattern=SAMPLING_KEY_PATTERN)]

VariableName = Annotated[str, Field(pattern=VARIABLE_NAME_PATTERN)]


class ModelConfigRequest(LazyModel):
    """The model a live run asks: one of the caller's connections and a model id it serves."""

    model_config = ConfigDict(extra="forbid")

    connection_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$")
    model_id: str = Field(min_length=1, max_length=256, examples=["example-base"])
    sampling: Sampling = Field(default_factory=Sampling)
    limits: InferenceLimits = Field(
        default_factory=InferenceLimits,
        description="how hard the run may ask the model: requests at once, and the provider's quotas; "
        "what is left out comes from the connection's limits, and none may exceed them",
    )
    inference_mode: InferenceMode = Field(
        default=InferenceMode.AUTO,
        description="on_demand asks each case; batch sends the cases to the provider's batch inference "
        "(Bedrock model invocation jobs, an OpenAI-compatible Batch API: about half the token price, "
        "answered within hours); auto uses batch above batch_above_cases, when the provider has one",
    )
    batch_above_cases: int = Field(
        default=DEFAULT_BATCH_ABOVE_CASES,
        ge=1,
        le=100_000_000,
        strict=True,
        description="with inference_mode auto: runs of more cases than this go to batch inference",
    )
    environment_variables: dict[str, StrictStr] = Field(
        default_factory=dict,
        max_length=MAX_VARIABLES,
        description="owner-only; a value that looks like a secret must be a Secrets Manager ARN",
    )

    @field_validator("environment_variables")
    @classmethod
    def _secrets_by_reference(cls, variables: dict[str, str]) -> dict[str, str]:
        for name, value in variables.items():
            if not _VARIABLE_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a variable name: letters, digits and _, no leading digit")
            if len(value) > MAX_VARIABLE_VALUE:
                raise ValueError(f"{name}: the value is longer than {MAX_VARIABLE_VALUE} characters")
            looks_secret = bool(_SECRET_NAME.search(name) or _KEY_SHAPED.search(value))
            if looks_secret and not re.fullmatch(SECRETS_MANAGER_ARN, value):
                # The message never repeats the value: it may be the secret itself.
                raise ValueError(
                    f"{name} looks like a secret: store its value in AWS Secrets Manager and pass the "
                    "secret's ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>) instead"
                )
        return variables


class RunConfigRequest(StrictRequest):
    """How the model was run, as a request gives it: bounded, so one run stays a small item.

    At most 16 sampling entries (64-character names; numbers within ±1e12, kept to 12 decimals; text up
    to 256 characters) and 32 environment variables (128-character names, 1,024-character values): about
    42,000 characters in all.
    """

    # ``additionalProperties: false`` states in the document what the key patterns enforce.
    sampling: dict[SamplingKey, SamplingValue] = Field(
        default_factory=dict,
        max_length=MAX_SAMPLING_ENTRIES,
        examples=[{"temperature": 0.0}],
        json_schema_extra={"additionalProperties": False},
    )
    environment_variables: dict[VariableName, Annotated[StrictStr, Field(max_length=MAX_VARIABLE_VALUE)]] = (
        Field(
            default_factory=dict, max_length=MAX_VARIABLES, json_schema_extra={"additionalProperties": False}
        )
    )

    def record(self) -> RunConfig:
        return RunConfig(sampling=self.sampling, environment_variables=self.environment_variables)


class CreateRunRequest(StrictRequest):
    environment_id: EnvironmentId
    version: Version
    model: Annotated[Text, Field(min_length=1, max_length=200, examples=["Qwen2.5-7B-LoRA"])]
    phase: Annotated[Text, Field(min_length=1, max_length=64)] | None = Field(
        default=None,
        description="the phase to run, by name or index; the environment's first phase when absent",
    )
    filename: SubmissionFilename | None = Field(
        default=None, description="name of the submission file to upload; submission.zip when absent"
    )
    run_config: RunConfigRequest | None = Field(default=None, description="visible to the run's owner only")
    live: ModelConfigRequest | None = Field(
        default=None,
        alias="model_config",
        description="a live run: the platform asks this model every case and generates the submission "
        "itself (no upload); its sampling and environment variables are the run's owner-only configuration",
    )

    @model_validator(mode="after")
    def _one_source_of_answers(self) -> CreateRunRequest:
        if self.live is not None and (self.filename is not None or self.run_config is not None):
            raise ValueError(
                "a live run generates its own submission and takes its sampling and environment variables "
                "from model_config: leave out filename and run_config"
            )
        return self


class RunSummary(LazyModel):
    """A run as lists show it (never its configuration)."""

    run_id: str
    environment_id: str
    environment_version: str
    phase: str | None = Field(default=None, description="null until the run starts, when no phase was named")
    model: str
    owner: str
    status: RunStatus
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    overall_score: float | None = None
    no_score: str | None = Field(
        default=None,
        description="why a completed run has no overall score (null): nothing was judged, for instance",
    )
    failure_reason: str | None = None
    artifact_status: ArtifactStatus | None = None
    dataset_id: str | None = None
    dataset_name: str | None = None
    case_scope: int | None = Field(
        default=None,
        description="how many cases the run is restricted to (an evaluation's held-out cases); "
        "null: every case",
    )

    @classmethod
    def of(cls, run: RunRecord) -> RunSummary:
        fields = set(cls.model_fields) - {"case_scope"}
        scope = run.case_scope.count if run.case_scope else None
        return cls.model_validate(run.model_dump(include=fields) | {"case_scope": scope})


class RunList(Listing):
    items: list[RunSummary]


class CreatedRun(LazyModel):
    """The new run, and where to PUT its submission (ingestion starts when the upload lands).

    A live run has nothing to upload: its upload fields are null and its model is being asked."""

    run: RunSummary
    upload_key: str | None
    upload_url: str | None
    upload_method: str | None = "PUT"
    expires_in: int | None = Field(description="seconds the upload URL stays valid")


class MetricTile(LazyModel):
    title: str
    key: str
    value: float
    precision: int | None = Field(default=None, description="decimals the leaderboard column shows")


class DatasetLink(LazyModel):
    dataset_id: str
    name: str | None = None
    href: str


class RunDetail(RunSummary):
    """A run as its page shows it: tiles in leaderboard column order, breakdowns, files, dataset."""

    submission_filename: str | None = None
    metrics: list[MetricTile] = Field(default_factory=list)
    other_metrics: dict[str, float] = Field(default_factory=dict)
    breakdowns: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(
        default_factory=list,
        description="what ingest noticed (duplicate, unknown or missing ids) and what went wrong in scoring "
        "without failing the run (a failing ingestion program beside the scoring program)",
    )
    programs: list[ProgramOutcome] = Field(
        default_factory=list,
        description="how each of the bundle's programs that ran ended: its exit code, whether it passed "
        "its time limit, and the end of its stderr (the traceback that explains the run's outcome)",
    )
    files: list[str] = Field(default_factory=list, description="labels of the files the run produced")
    artifact_reason: str | None = None
    dataset: DatasetLink | None = None
    judge: JudgeAgreement | None = Field(
        default=None,
        description="for a run a judge model scored: that judge's agreement with people as its environment "
        "version's registration measured it, or that it is uncalibrated",
    )
    live_model: LiveModelView | None = Field(
        default=None, description="for a live run: the model asked (its sampling is in the owner-only config)"
    )
    inference: InferenceSummary | None = Field(
        default=None, description="for a live run: how its cases were answered (details in its Inference Log)"
    )
    judging: JudgingSummary | None = Field(
        default=None,
        description="for a run of an environment whose template asks a judge: the judge (its model and "
        "connection), its calls, tokens and cost, apart from the run's model's, and the cases it left "
        "unjudged (details in the run's judgments)",
    )
    progress: InferenceProgressView | None = Field(
        default=None,
        description="for a live run: what it asked its model and waits for, as its steps last reported",
    )
    batch: BatchSummary | None = Field(
        default=None,
        description="for a live run answered by its provider's batch inference: each job's provider id, "
        "status and record counts (the records a job could not answer are the run's unanswered cases)",
    )
    judging_batch: BatchSummary | None = Field(
        default=None,
        description="for a run whose judge was asked through its provider's batch inference: each job's "
        "provider id, status and record counts (a record a job could not answer is an unjudged case)",
    )


class RunConfiguration(RunConfig):
    """The run's configuration as its owner reads it; for a live run, also how it asked its model (the
    inference mode, the limits it asked within, how long it waited for an answer) and the prices its cost
    is counted at (its connection's, copied when the run was created)."""

    inference_mode: InferenceMode | None = Field(
        default=None, description="a live run's only, as asked: auto chooses by size when the run is planned"
    )
    limits: InferenceLimits | None = Field(default=None, description="a live run's only")
    timeout_s: float | None = Field(
        default=None,
        description="a live run's only: the seconds one call to the model may take before it is given up and "
        "asked again (its connection's, copied when the run was created)",
    )
    prices: ModelPrices | None = Field(default=None, description="a live run's only; absent: none named")

    @classmethod
    def of(cls, run: RunRecord) -> RunConfiguration:
        live = run.live_model
        return cls(
            **run.run_config.model_dump(),
            inference_mode=live.inference_mode if live else None,
            limits=live.limits if live else None,
            timeout_s=live.timeout_s if live else None,
            prices=live.prices if live else None,
        )


class InferenceProgressView(InferenceProgress):
    """A live run's progress, with the cases it waits for now."""

    @computed_field(description="cases asked and neither answered nor given up yet")  # type: ignore[prop-decorator]
    @property
    def waiting(self) -> int:
        return max(0, self.asked - self.answered - self.unanswered)


class LiveModelView(LazyModel):
    """Which model a live run asked, without where or how (those stay with its owner)."""

    connection_id: str
    provider: str
    model_id: str


class RunFile(LazyModel):
    label: str
    key: str
    size: int = Field(description="bytes")
    url: str = Field(description="presigned GET URL, short-lived")
    view_url: str | None = Field(
        default=None,
        description="presigned GET URL a browser shows in place rather than saves (HTML reports and logs); "
        "none for other files",
    )


class RunFiles(LazyModel):
    run_id: str
    files: list[RunFile]
    expires_in: int = Field(description="seconds the URLs stay valid")


class DetailedResults(LazyModel):
    """The head of detailed_results.json; the per-case list is behind ``url``."""

    run_id: str
    title: str | None = None
    summary: dict[str, Any] = Field(default_factory=dict)
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    breakdowns: dict[str, Any] = Field(default_factory=dict)
    url: str = Field(description="presigned GET URL of the full detailed_results.json, short-lived")
    expires_in: int
