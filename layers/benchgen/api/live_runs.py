"""Live runs as ``POST /runs`` creates them: a model configuration instead of an uploaded submission.

The configuration names one of the caller's provider connections and a model id; the run keeps where the
connection reached its model (references only, never a key) and starts the InferencePipeline, whose
execution name derives from the run id so that a second start collides.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

from benchgen.api.errors import ApiError, NotFound
from benchgen.aws.executions import ExecutionStarter
from benchgen.providers.capabilities import Unsupported
from benchgen.providers.checks import check_request
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.registry import provider
from benchgen.records.runs import (
    DEFAULT_BATCH_ABOVE_CASES,
    LIMIT_FIELDS,
    ConnectionQuotas,
    InferenceLimits,
    LiveModel,
)
from benchgen.steps.keys import live_execution_name
from benchgen.vocabulary import InferenceMode, Sampling

SECRETS_MANAGER_ARN = r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@!-]+$"
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# Names that say their value is a credential, and values shaped like the keys providers hand out.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_KEY_SHAPED = re.compile(r"^(sk-|hf_|AKIA|ASIA|ghp_|gho_|xox[bp]-|Bearer\s)|^[A-Za-z0-9_\-]{32,}$")
MAX_VARIABLES = 32
MAX_VARIABLE_VALUE = 1024


class ModelConfigRequest(BaseModel):
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


def run_limits(requested: InferenceLimits, connection: ConnectionRecord) -> InferenceLimits:
    """The run's limits: those it states, the connection's where it states none, and never above them.

    A limit above the connection's bound is refused (400) with a sentence naming the bound.
    """
    bounds = connection.limits or ConnectionQuotas()
    stated = requested.model_fields_set
    limits: dict[str, int | None] = {}
    for field in LIMIT_FIELDS:
        bound: int | None = getattr(bounds, field)
        asked: int | None = getattr(requested, field) if field in stated else None
        if bound is not None and asked is not None and asked > bound:
            raise ApiError(
                f"limits.{field} is {asked}, above the bound of {bound} that connection "
                f"{connection.connection_id} sets: ask for at most {bound}, or leave it out to use {bound}"
            )
        if asked is None:
            asked = bound if bound is not None else getattr(requested, field)
        limits[field] = asked
    return InferenceLimits.model_validate(limits)


def live_model_for(
    config: ModelConfigRequest, *, owner: str, connection: ConnectionRecord | None
) -> LiveModel:
    """The caller's connection, checked to answer live runs, as the run keeps it.

    Another user's connection is answered like a missing one, so ids reveal nothing; a connection that
    cannot answer live runs is refused (400) with the check's sentence, which says what would serve.
    """
    if connection is None or connection.owner != owner:
        raise NotFound(
            f"no connection {config.connection_id!r} of yours: create one with POST /connections "
            "(GET /connections lists yours)"
        )
    try:
        check_request(connection, inference=True)
    except Unsupported as error:
        raise ApiError(str(error)) from None
    definition = provider(connection.provider)
    if config.inference_mode is InferenceMode.BATCH and definition.batch() is None:
        raise ApiError(f"inference_mode batch: {definition.batch_gap}")
    return LiveModel(
        connection_id=connection.connection_id,
        provider=connection.provider,
        model_id=config.model_id,
        sampling=config.sampling,
        limits=run_limits(config.limits, connection),
        inference_mode=config.inference_mode,
        batch_above_cases=config.batch_above_cases,
        region=connection.region,
        endpoint_name=connection.endpoint_name,
        base_url=connection.base_url,
        secret_arn=connection.secret_arn,
        prices=connection.prices,
    )


def start_live_run(run_id: str, *, state_machine_arn: str | None, client: Any = None) -> bool:
    """Start the run's InferencePipeline execution; False when it was already started."""
    if not state_machine_arn:
        raise RuntimeError("INFERENCE_STATE_MACHINE_ARN is not set: the API function starts live runs")
    return ExecutionStarter(state_machine_arn, client=client).start_once(
        live_execution_name(run_id), {"run_id": run_id}
    )
