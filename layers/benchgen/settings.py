"""What every function reads from its environment, validated once per cold start.

Plain pydantic models read from ``os.environ`` by their fields' variable names, whatever the names' case:
pydantic-settings would do the same, but its import (asyncio among it) cost every cold start about an
eighth of a task function's import.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Self

from pydantic import ConfigDict, Field, ValidationError, field_validator

from benchgen.lazy_model import LazyModel

# Every function counts its business events under this CloudWatch namespace. Handlers name it themselves
# rather than read POWERTOOLS_METRICS_NAMESPACE: in-process (tests, the local cloud) a handler may be
# imported before that variable is set, and Metrics refuses to publish without a namespace.
METRICS_NAMESPACE = "BenchGen"
# The Cognito group whose members may evaluate their own trained models: the stack creates it in the user
# pool under this name and hands the same name to the API.
EVALUATORS_GROUP = "evaluators"
# The repository's own folder of runtime environments (``make runtimes`` creates them), for local runs.
LOCAL_RUNTIMES = Path(__file__).resolve().parents[2] / ".runtimes"


class SettingsError(RuntimeError):
    """The function's environment lacks a variable it needs, or holds an unusable value."""


class EnvironmentSettings(LazyModel):
    """Settings read from the environment: each field from the variable its alias names, in any case.

    Built when first read: a function that reads only where the runtimes are (the sandbox) does not
    build the stack's settings.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, validate_by_name=True)

    @classmethod
    def from_environment(cls) -> Self:
        return cls.model_validate({name.upper(): value for name, value in os.environ.items()})


class Settings(EnvironmentSettings):
    """Resource names the stack hands to every function, under the same variable names."""

    data_bucket: str = Field(min_length=1, validation_alias="DATA_BUCKET")
    environments_table: str = Field(min_length=1, validation_alias="ENVIRONMENTS_TABLE")
    runs_table: str = Field(min_length=1, validation_alias="RUNS_TABLE")
    datasets_table: str = Field(min_length=1, validation_alias="DATASETS_TABLE")
    idempotency_table: str = Field(min_length=1, validation_alias="IDEMPOTENCY_TABLE")
    packages_table: str = Field(min_length=1, validation_alias="PACKAGES_TABLE")
    event_bus_name: str = Field(min_length=1, validation_alias="EVENT_BUS_NAME")
    preparations_table: str = Field(min_length=1, validation_alias="PREPARATIONS_TABLE")
    training_runs_table: str = Field(min_length=1, validation_alias="TRAINING_RUNS_TABLE")
    # Only the score function starts executions, so only its environment carries the ARN.
    state_machine_arn: str | None = Field(default=None, validation_alias="STATE_MACHINE_ARN")
    # The score function starts a sharded run's ShardedScoring execution.
    sharded_scoring_state_machine_arn: str | None = Field(
        default=None, validation_alias="SHARDED_SCORING_STATE_MACHINE_ARN"
    )
    # The score function hands a run whose template asks a judge to its JudgingPipeline execution first.
    judging_state_machine_arn: str | None = Field(default=None, validation_alias="JUDGING_STATE_MACHINE_ARN")
    calibration_state_machine_arn: str | None = Field(
        default=None, validation_alias="CALIBRATION_STATE_MACHINE_ARN"
    )
    # Registration cuts a task's cases into shards of this many when it has more (set at deploy time, see
    # infra/sizing.py); unset, nothing is sharded.
    shard_cases: int | None = Field(default=None, ge=1, validation_alias="SHARD_CASES")
    # Only the API function starts package builds.
    package_state_machine_arn: str | None = Field(default=None, validation_alias="PACKAGE_STATE_MACHINE_ARN")
    # The API starts preparations, so only its environment carries that state machine's ARN.
    preparation_state_machine_arn: str | None = Field(
        default=None, validation_alias="PREPARATION_STATE_MACHINE_ARN"
    )
    # The API starts training runs, so only its environment carries the training state machine's ARN.
    training_state_machine_arn: str | None = Field(
        default=None, validation_alias="TRAINING_STATE_MACHINE_ARN"
    )
    # Functions that run untrusted programs hand each to the sandbox function of its runtime (a JSON object,
    # runtime -> function name, set by the stack); unset, they run them through the local runner here.
    sandbox_functions: dict[str, str] | None = Field(default=None, validation_alias="SANDBOX_FUNCTIONS")
    # How many times Lambda delivers an event whose invocation fails (1 + its retries): the last attempt
    # of a run step fails the run instead of leaving it Running. Without it, the first attempt is the last.
    step_attempts: int = Field(default=1, ge=1, validation_alias="STEP_ATTEMPTS")
    # The longest execution_time_limit a bundle may set: what the run steps' timeout leaves a program.
    max_program_seconds: int | None = Field(default=None, ge=1, validation_alias="MAX_PROGRAM_SECONDS")
    # Presigned URLs are bearer credentials: keep them short-lived, and never past an hour.
    presign_ttl_seconds: int = Field(default=300, ge=1, le=3600, validation_alias="PRESIGN_TTL_SECONDS")
    connections_table: str = Field(min_length=1, validation_alias="CONNECTIONS_TABLE")
    # Where the stack runs: a connection's Secrets Manager ARN must name a secret of this account and region.
    account_id: str | None = Field(default=None, pattern=r"^\d{12}$", validation_alias="ACCOUNT_ID")
    region: str | None = Field(default=None, min_length=1, validation_alias="AWS_REGION")
    # Live runs: the API starts this state machine; the plan step cuts cases into shards of this size; the
    # steps that call a model try each call this many times, waits doubling from the base.
    inference_state_machine_arn: str | None = Field(
        default=None, validation_alias="INFERENCE_STATE_MACHINE_ARN"
    )
    inference_shard_size: int = Field(default=100, ge=1, le=1000, validation_alias="INFERENCE_SHARD_SIZE")
    model_call_attempts: int = Field(default=5, ge=1, le=20, validation_alias="MODEL_CALL_ATTEMPTS")
    model_retry_base_seconds: float = Field(
        default=1.0, ge=0, le=60, validation_alias="MODEL_RETRY_BASE_SECONDS"
    )
    # Live runs on a provider's batch inference: the wait between two looks at the run's jobs, and how many
    # looks before the run fails for time (48 hours at the defaults: Bedrock ends a job after 24); the
    # role Bedrock assumes to read the jobs' records and write their output (set by the stack).
    batch_poll_seconds: int = Field(default=300, ge=1, le=3600, validation_alias="BATCH_POLL_SECONDS")
    batch_max_polls: int = Field(default=576, ge=1, le=5000, validation_alias="BATCH_MAX_POLLS")
    bedrock_batch_role_arn: str | None = Field(default=None, validation_alias="BEDROCK_BATCH_ROLE_ARN")
    # The most records a batch job holds when the account's quota is below the provider's documented
    # maximum (Bedrock's "Records per batch inference job" is adjustable); unset, the documented maximum.
    batch_max_records: int | None = Field(default=None, ge=1, validation_alias="BATCH_MAX_RECORDS")
    # Evaluations and the owners' evaluation grants; the Cognito group whose members may evaluate their
    # own training runs; the API starts the evaluation state machine.
    evaluations_table: str = Field(min_length=1, validation_alias="EVALUATIONS_TABLE")
    evaluators_group: str = Field(default=EVALUATORS_GROUP, min_length=1, validation_alias="EVALUATORS_GROUP")
    evaluation_state_machine_arn: str | None = Field(
        default=None, validation_alias="EVALUATION_STATE_MACHINE_ARN"
    )
    # How long the EvaluationPipeline waits between checks of its two runs, and how many checks it makes
    # before it gives up (12 hours at the defaults: an evaluation asks its models on demand).
    evaluation_wait_seconds: int = Field(
        default=60, ge=1, le=3600, validation_alias="EVALUATION_WAIT_SECONDS"
    )
    evaluation_max_checks: int = Field(default=720, ge=1, le=10000, validation_alias="EVALUATION_MAX_CHECKS")
    # The web console's https origin: the API answers browsers calling from it (CORS), and from no other.
    console_origin: str | None = Field(
        default=None, pattern=r"^https?://[^/\s]+$", validation_alias="CONSOLE_ORIGIN"
    )

    @field_validator("sandbox_functions", mode="before")
    @classmethod
    def _decode_json(cls, value: Any) -> Any:
        # The variable holds a JSON object; given in code, the field is already one.
        return json.loads(value) if isinstance(value, str) else value


class RuntimeSettings(EnvironmentSettings):
    """Where the runtimes' environments are: ``<folder>/<runtime>/bin/python`` each. The sandbox images set
    it to their own folder; locally it defaults to the repository's ``.runtimes``."""

    runtimes_folder: Path = Field(default=LOCAL_RUNTIMES, validation_alias="BENCHGEN_RUNTIMES")


def load_settings() -> Settings:
    """Read the settings from ``os.environ``; a missing or bad variable raises :class:`SettingsError`.

    Handlers call this once per cold start (not at import), so a misconfigured function fails on its
    first invocation with a message that names the variable.
    """
    try:
        return Settings.from_environment()
    except ValidationError as error:
        problems = []
        for item in error.errors():
            name = ".".join(str(part) for part in item["loc"]).upper()
            problems.append(f"{name}: {item['msg']}")
        raise SettingsError("the function's environment is incomplete: " + "; ".join(problems)) from None
