"""Request and response bodies of the REST API (the OpenAPI document is generated from these)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictStr,
    WithJsonSchema,
    model_validator,
)

from benchgen.api.live_runs import ModelConfigRequest
from benchgen.records.datasets import DatasetRecord
from benchgen.records.environments import EnvironmentRecord
from benchgen.records.prices import ModelPrices
from benchgen.records.runs import (
    ArtifactStatus,
    BatchSummary,
    InferenceLimits,
    InferenceSummary,
    RunConfig,
    RunRecord,
    RunStatus,
)
from benchgen.vocabulary import InferenceMode

ENVIRONMENT_ID_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
VERSION_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,30}[A-Za-z0-9])?$"
FILENAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.(?:json|jsonl|zip)$"
IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9_.:-]{1,255}$"
# Cognito group names, less the characters that would not survive the authorizer's claim string.
GROUP_PATTERN = r"^[A-Za-z0-9_.@+=-]{1,128}$"
# Ids in paths and filters (run, dataset, environment as uploaded) and the listings' opaque tokens.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$"
KIND_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
NEXT_TOKEN_PATTERN = r"^[A-Za-z0-9_-]{1,1024}$"  # noqa: S105  (a pattern, not a secret)
# Free text such as a model name: no control characters, and neither blank nor padded with spaces. The
# ends exclude the characters whose "whitespace" status differs between Python's and ECMA's ``\s``
# (C0/C1 controls, the BOM), so this document and the validator draw the same line.
TEXT_PATTERN = r"^[^\s\x00-\x1f\x7f-\x9f\ufeff](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f\ufeff])?$"
SAMPLING_KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
VARIABLE_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
#: Bounds of a run configuration; together they cap it at about 42,000 characters (see RunConfigRequest).
MAX_SAMPLING_ENTRIES = 16
MAX_SAMPLING_TEXT = 256
MAX_VARIABLES = 32
MAX_VARIABLE_VALUE = 1024
# DynamoDB numbers hold 38 digits between 1e-130 and 1e126: a number a request carries stays well inside,
# within ±1e12 where no narrower bound of its own applies (tests/unit/test_openapi_bounds.py checks that
# every number of every request schema has both ends).
MAX_REQUEST_NUMBER = 10**12
SAMPLING_DECIMALS = 12
MAX_HYPERPARAMETER_TEXT = 64


def _matching(pattern: str, rule: str) -> Callable[[str], str]:
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(rule)
        return value

    return check


# The pattern is shown in the OpenAPI document; the validator enforces it with a sentence people can act on.
EnvironmentId = Annotated[
    str,
    Field(json_schema_extra={"pattern": ENVIRONMENT_ID_PATTERN}, examples=["gsm8k"]),
    AfterValidator(
        _matching(
            ENVIRONMENT_ID_PATTERN,
            "must be 1-64 lowercase letters, digits and '-', starting and ending with a letter or digit",
        )
    ),
]
Version = Annotated[
    str,
    Field(json_schema_extra={"pattern": VERSION_PATTERN}, examples=["1", "2026.06"]),
    AfterValidator(
        _matching(
            VERSION_PATTERN,
            "must be 1-32 letters, digits, '.', '_' and '-', starting and ending with a letter or digit",
        )
    ),
]
GroupName = Annotated[
    str,
    Field(json_schema_extra={"pattern": GROUP_PATTERN}, examples=["gsm8k-maintainers"]),
    AfterValidator(
        _matching(
            GROUP_PATTERN, "must be 1-128 letters, digits and '_', '.', '@', '+', '=', '-' (a Cognito group)"
        )
    ),
]
SubmissionFilename = Annotated[
    str,
    Field(json_schema_extra={"pattern": FILENAME_PATTERN}, examples=["predictions.zip"]),
    AfterValidator(
        _matching(
            FILENAME_PATTERN,
            "must be letters, digits, '.', '_' and '-' only, ending in .json, .jsonl or .zip",
        )
    ),
]


Text = Annotated[
    str,
    Field(json_schema_extra={"pattern": TEXT_PATTERN}),
    AfterValidator(
        _matching(TEXT_PATTERN, "must not be blank, start or end with a space, or hold control characters")
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


def _hyperparameter_value(value: object) -> int | float | str:
    """A finite number within ±1e12, or text of at most 64 characters, as the provider's own range is
    checked later (booleans and anything else are refused, as the document says)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= MAX_REQUEST_NUMBER:
        return value  # NaN and infinities fail the comparison
    if isinstance(value, str) and len(value) <= MAX_HYPERPARAMETER_TEXT:
        return value
    raise ValueError(
        f"must be a number between -{MAX_REQUEST_NUMBER:.0e} and {MAX_REQUEST_NUMBER:.0e}, "
        f"or text of at most {MAX_HYPERPARAMETER_TEXT} characters"
    )


HyperparameterValue = Annotated[
    int | float | str,
    PlainValidator(_hyperparameter_value),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": -MAX_REQUEST_NUMBER, "maximum": MAX_REQUEST_NUMBER},
                {"type": "string", "maxLength": MAX_HYPERPARAMETER_TEXT},
            ]
        }
    ),
]
HyperparameterName = Annotated[str, Field(pattern=SAMPLING_KEY_PATTERN)]
VariableName = Annotated[str, Field(pattern=VARIABLE_NAME_PATTERN)]


class _Request(BaseModel):
    # A misspelt field is an error, not silently ignored. Values are taken as sent (no trimming): what the
    # OpenAPI document calls valid is exactly what is accepted.
    model_config = ConfigDict(extra="forbid")


# Query and path parameters: an empty or malformed value is refused naming the parameter, never looked up.
NextToken = Annotated[str | None, Query(pattern=NEXT_TOKEN_PATTERN, description="from the previous page")]
ResourceId = Annotated[str, Path(pattern=ID_PATTERN)]


def _idempotency_key(noun: str) -> Header:
    """The optional Idempotency-Key header of a route that creates a ``noun``."""
    return Header(
        alias="Idempotency-Key",
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description=(
            f"any unique value (a UUID, say): a retry with the same key and body gets the same {noun} "
            "for 24 hours; the same key with another body is refused (422)"
        ),
    )


RunIdempotencyKey = Annotated[str | None, _idempotency_key("run")]
PreparationIdempotencyKey = Annotated[str | None, _idempotency_key("preparation")]
TrainingRunIdempotencyKey = Annotated[str | None, _idempotency_key("training run")]
EvaluationIdempotencyKey = Annotated[str | None, _idempotency_key("evaluation")]


class Listing(BaseModel):
    """Present on every list: pass ``next_token`` back as a query parameter to get the next page."""

    next_token: str | None = Field(default=None, description="absent on the last page")


# ---- environments ---------------------------------------------------------------------------------------


class CreateEnvironmentRequest(_Request):
    environment_id: EnvironmentId
    version: Version
    publisher_group: GroupName | None = Field(
        default=None,
        description=(
            "a Cognito group whose members may publish versions of this environment too; set by the "
            "first publisher (who becomes the owner) and changed only by the owner; absent leaves it as is"
        ),
    )


class EnvironmentUpload(BaseModel):
    """Where to PUT the bundle zip, with which headers; registration starts when the upload lands."""

    environment_id: str
    version: str
    bundle_key: str
    upload_url: str
    upload_method: str = "PUT"
    upload_headers: dict[str, str] = Field(
        description="send exactly these headers with the PUT: they are signed into the URL and name you "
        "as the publisher"
    )
    owner: str = Field(description="the user id of the environment's owner")
    publisher_group: str | None = Field(default=None, description="the group whose members publish too")
    expires_in: int = Field(description="seconds the upload URL stays valid")


class EnvironmentView(EnvironmentRecord):
    """A version as lists show it, with who may publish the environment's next versions."""

    owner: str | None = Field(
        default=None,
        description="the user id of the environment's owner (`operator` for one first published by a direct "
        "bucket upload); none for one published before environments had owners",
    )
    publisher_group: str | None = Field(
        default=None,
        description="the Cognito group whose members publish versions too, if the owner named one",
    )


class EnvironmentList(Listing):
    items: list[EnvironmentView]


# ---- runs -------------------------------------------------------------------------------------------------


class RunConfigRequest(_Request):
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


class CreateRunRequest(_Request):
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


class RunSummary(BaseModel):
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


class CreatedRun(BaseModel):
    """The new run, and where to PUT its submission (ingestion starts when the upload lands).

    A live run has nothing to upload: its upload fields are null and its model is being asked."""

    run: RunSummary
    upload_key: str | None
    upload_url: str | None
    upload_method: str | None = "PUT"
    expires_in: int | None = Field(description="seconds the upload URL stays valid")


class MetricTile(BaseModel):
    title: str
    key: str
    value: float
    precision: int | None = Field(default=None, description="decimals the leaderboard column shows")


class DatasetLink(BaseModel):
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
    files: list[str] = Field(default_factory=list, description="labels of the files the run produced")
    artifact_reason: str | None = None
    dataset: DatasetLink | None = None
    live_model: LiveModelView | None = Field(
        default=None, description="for a live run: the model asked (its sampling is in the owner-only config)"
    )
    inference: InferenceSummary | None = Field(
        default=None, description="for a live run: how its cases were answered (details in its Inference Log)"
    )
    batch: BatchSummary | None = Field(
        default=None,
        description="for a live run answered by its provider's batch inference: each job's provider id, "
        "status and record counts (the records a job could not answer are the run's unanswered cases)",
    )


class RunConfiguration(RunConfig):
    """The run's configuration as its owner reads it; for a live run, also how it asked its model (the
    inference mode and the limits it asked within) and the prices its cost is counted at (its
    connection's, copied when the run was created)."""

    inference_mode: InferenceMode | None = Field(
        default=None, description="a live run's only, as asked: auto chooses by size when the run is planned"
    )
    limits: InferenceLimits | None = Field(default=None, description="a live run's only")
    prices: ModelPrices | None = Field(default=None, description="a live run's only; absent: none named")

    @classmethod
    def of(cls, run: RunRecord) -> RunConfiguration:
        live = run.live_model
        return cls(
            **run.run_config.model_dump(),
            inference_mode=live.inference_mode if live else None,
            limits=live.limits if live else None,
            prices=live.prices if live else None,
        )


class LiveModelView(BaseModel):
    """Which model a live run asked, without where or how (those stay with its owner)."""

    connection_id: str
    provider: str
    model_id: str


class RunFile(BaseModel):
    label: str
    key: str
    size: int = Field(description="bytes")
    url: str = Field(description="presigned GET URL, short-lived")
    view_url: str | None = Field(
        default=None,
        description="presigned GET URL a browser shows in place rather than saves (HTML reports and logs); "
        "none for other files",
    )


class RunFiles(BaseModel):
    run_id: str
    files: list[RunFile]
    expires_in: int = Field(description="seconds the URLs stay valid")


class DetailedResults(BaseModel):
    """The head of detailed_results.json; the per-case list is behind ``url``."""

    run_id: str
    title: str | None = None
    summary: dict[str, Any] = Field(default_factory=dict)
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    breakdowns: dict[str, Any] = Field(default_factory=dict)
    url: str = Field(description="presigned GET URL of the full detailed_results.json, short-lived")
    expires_in: int


# ---- datasets ----------------------------------------------------------------------------------------


class DatasetList(Listing):
    items: list[DatasetRecord]
