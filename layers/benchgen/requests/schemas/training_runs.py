"""The bodies of ``/training-runs``."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, PlainValidator, WithJsonSchema

from benchgen.lazy_model import LazyModel
from benchgen.records.training_runs import TrainingRunRecord
from benchgen.requests.schemas.common import ID_PATTERN, MAX_REQUEST_NUMBER
from benchgen.requests.schemas.runs import SAMPLING_KEY_PATTERN
from benchgen.stored_numbers import storable

MAX_HYPERPARAMETER_TEXT = 64


def _hyperparameter_value(value: object) -> int | float | str:
    """A finite number within ±1e12, or text of at most 64 characters, as the provider's own range is
    checked later (booleans and anything else are refused, as the document says)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= MAX_REQUEST_NUMBER:
        # NaN and infinities fail the comparison; a float too small to store is refused saying so.
        return storable(value) if isinstance(value, float) else value
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


class CreateTrainingRunRequest(LazyModel):
    model_config = ConfigDict(extra="forbid")

    package_id: str = Field(pattern=ID_PATTERN, description="a Ready package of yours")
    connection_id: str = Field(pattern=ID_PATTERN, description="the provider connection to train on")
    base_model: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="overrides the base model recorded with the package's preparation (with a warning)",
    )
    hyperparameters: dict[HyperparameterName, HyperparameterValue] = Field(
        default_factory=dict,
        max_length=20,
        description="the provider's own names and values (numbers within ±1e12, text up to 64 characters), "
        "checked against the provider's own ranges; the package's suggestions are never applied",
        json_schema_extra={"additionalProperties": False},
    )


class LaunchedTrainingRun(LazyModel):
    training_run: TrainingRunRecord
    notices: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class TrainingRunList(LazyModel):
    items: list[TrainingRunRecord]
    next_token: str | None = None
