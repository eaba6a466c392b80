"""One provider training job: what it needs, what a poll saw, and how each provider's words map to ours.

The adapters (``benchgen.aws.training_jobs`` for Bedrock and SageMaker, ``benchgen.providers.openai_jobs``
for OpenAI-compatible services) implement :class:`TrainingJobs`; the training pipeline calls only that.
A job is keyed by a fixed name derived from the training run (:func:`job_name_for`), so starting it twice
finds the first job instead of making a second one.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from benchgen.errors import BenchGenError
from benchgen.providers.profiles import ProviderKind, Unsupported, family_matches
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method


class ProviderFault(BenchGenError):
    """A provider call that failed; the message names the provider and what it said.

    ``retryable``: the same call may succeed later (throttling, the provider's own faults, timeouts);
    ``retry_after``: the wait the provider asked for, in seconds, when it said one.
    """

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class JobSpec(BaseModel):
    """Everything one provider job needs, fixed before it starts."""

    model_config = ConfigDict(frozen=True)

    training_run_id: str
    job_name: str
    method: Method
    base_model: str
    hyperparameters: dict[str, str] = Field(default_factory=dict)
    train_uri: str  # s3://... (bedrock, sagemaker) or the uploaded file id (openai-compatible)
    validation_uri: str | None = None
    output_uri: str  # s3://bucket/training/<id>/output/ (openai-compatible keeps its own output)
    role_arn: str | None = None


class JobState(BaseModel):
    """What one look at a provider job saw."""

    model_config = ConfigDict(frozen=True)

    provider_status: str  # the provider's own word, kept verbatim in the timeline
    status: TrainingStatus
    job_id: str | None = None  # ARN or provider id
    result_model: str | None = None
    failure_reason: str | None = None  # the provider's own message
    cost: dict[str, float | str] = Field(default_factory=dict)
    message: str | None = None  # BenchGen's note, e.g. on a status it does not know


class TrainingJobs(Protocol):
    """One provider's training jobs."""

    def upload(self, name: str, data: bytes) -> str | None:
        """Hand a training file to the provider: its file id, or None where files go to S3 instead."""
        ...

    def start(self, spec: JobSpec) -> JobState:
        """Start ``spec``'s job; a second start of the same job name returns that job, never a new one."""
        ...

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        """What the job is doing now."""
        ...

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        """Ask the provider to stop the job; its state after asking."""
        ...


JOB_NAME_PREFIX = "benchgen-"
_JOB_NAME_MAX = 63
_UNSAFE = re.compile(r"[^a-zA-Z0-9]+")


def job_name_for(training_run_id: str) -> str:
    """The provider job name of a training run: always the same for the same run, at most 63 letters,
    digits and single dashes, starting and ending with a letter or digit (Bedrock's and SageMaker's rules).

    A training run id (``train-`` and 24 hex digits) gives ``benchgen-train-<hex>`` (39 characters, within
    the 40 an OpenAI-compatible suffix takes); anything else is cleaned, and cut with a digest if long."""
    cleaned = _UNSAFE.sub("-", training_run_id).strip("-")
    name = f"{JOB_NAME_PREFIX}{cleaned}" if cleaned else ""
    if cleaned and len(name) <= _JOB_NAME_MAX and cleaned == training_run_id:
        return name
    digest = hashlib.sha256(training_run_id.encode()).hexdigest()[:16]
    head = cleaned[: _JOB_NAME_MAX - len(JOB_NAME_PREFIX) - len(digest) - 1].strip("-")
    return f"{JOB_NAME_PREFIX}{head}-{digest}" if head else f"{JOB_NAME_PREFIX}{digest}"


_S = TrainingStatus
# Each provider's documented job statuses. "Stopping" and "cancel_requested" are still running: the job
# may yet finish before the stop takes. SageMaker's "Deleting" means the job is being removed by someone
# outside BenchGen, so nothing more will come of it.
_STATUSES: dict[ProviderKind, dict[str, TrainingStatus]] = {
    ProviderKind.BEDROCK: {
        "inprogress": _S.RUNNING,
        "completed": _S.SUCCEEDED,
        "failed": _S.FAILED,
        "stopping": _S.RUNNING,
        "stopped": _S.CANCELLED,
    },
    ProviderKind.SAGEMAKER: {
        "inprogress": _S.RUNNING,
        "completed": _S.SUCCEEDED,
        "failed": _S.FAILED,
        "stopping": _S.RUNNING,
        "stopped": _S.CANCELLED,
        "deleting": _S.CANCELLED,
    },
    # Together's values, and OpenAI's (validating_files, succeeded, failed), which other OpenAI-style
    # services also use.
    ProviderKind.OPENAI_COMPATIBLE: {
        "pending": _S.QUEUED,
        "queued": _S.QUEUED,
        "validating_files": _S.QUEUED,
        "running": _S.RUNNING,
        "compressing": _S.RUNNING,
        "uploading": _S.RUNNING,
        "cancel_requested": _S.RUNNING,
        "cancelled": _S.CANCELLED,
        "error": _S.FAILED,
        "failed": _S.FAILED,
        "completed": _S.SUCCEEDED,
        "succeeded": _S.SUCCEEDED,
    },
}


def _status_key(provider_status: str) -> str:
    return provider_status.strip().lower().replace(" ", "_")


def map_status(provider: ProviderKind, provider_status: str) -> TrainingStatus:
    """Our status for a provider's own: case and spacing do not matter, and a value the provider did not
    document counts as still running (a poll later sees where it ends; :func:`status_note` says so)."""
    return _STATUSES[provider].get(_status_key(provider_status), TrainingStatus.RUNNING)


def status_note(provider: ProviderKind, provider_status: str) -> str | None:
    """A sentence for the timeline when ``provider_status`` is not one BenchGen knows; None otherwise."""
    if _status_key(provider_status) in _STATUSES[provider]:
        return None
    return (
        f"{provider} reported status {provider_status!r}, which BenchGen does not know: counted as still "
        "running until the provider reports an end"
    )


@dataclass(frozen=True)
class Hyperparameter:
    """One documented hyperparameter: its type, and the inclusive range the provider accepts."""

    kind: type[int] | type[float] | type[bool]
    low: float | None = None
    high: float | None = None

    def describe(self, name: str) -> str:
        if self.kind is bool:
            return f"{name} (true or false)"
        kind = "integer" if self.kind is int else "number"
        if self.low is not None and self.low == self.high:
            return f"{name} ({kind}, only {_number(self.low)})"
        if self.high is None:
            return f"{name} ({kind} from {_number(self.low)})"
        return f"{name} ({kind} from {_number(self.low)} to {_number(self.high)})"


def _number(value: float | None) -> str:
    return "any" if value is None else f"{value:g}"


_INT, _FLOAT, _BOOL = int, float, bool
# Bedrock's documented hyperparameters per model family (the customization pages' tables).
_BEDROCK: dict[str, dict[str, Hyperparameter]] = {
    "nova": {
        "epochCount": Hyperparameter(_INT, 1, 5),
        "learningRate": Hyperparameter(_FLOAT, 1e-6, 1e-4),
        "learningRateWarmupSteps": Hyperparameter(_INT, 0, 100),
    },
    "llama3.1": {
        "epochCount": Hyperparameter(_INT, 1, 10),
        "batchSize": Hyperparameter(_INT, 1, 1),
        "learningRate": Hyperparameter(_FLOAT, 5e-6, 0.1),
    },
    "claude-3-haiku": {
        "epochCount": Hyperparameter(_INT, 1, 10),
        "batchSize": Hyperparameter(_INT, 4, 256),
        "learningRateMultiplier": Hyperparameter(_FLOAT, 0.1, 2),
        "earlyStoppingEnabled": Hyperparameter(_BOOL),
        "earlyStoppingThreshold": Hyperparameter(_FLOAT, 0, 0.1),
        "earlyStoppingPatience": Hyperparameter(_INT, 1, 10),
    },
}
# SageMaker serverless customization: each Public Hub model's recipe names its own training settings, and
# no list of them is published across models, so BenchGen checks only what CreateTrainingJob's
# HyperParameters map takes (at most 100 names of up to 256 characters, values up to 2500) and leaves
# the names to the recipe: SageMaker refuses the job with its own message, which the run keeps.
SAGEMAKER_MAX_HYPERPARAMETERS = 100
_SAGEMAKER_MAX_NAME = 256
_SAGEMAKER_MAX_VALUE = 2500
# Together's POST /fine-tunes training fields (dpo_beta only for preference training). Together documents
# the fields and their types but no upper bounds, so only the bounds the fields' meaning sets are checked.
_OPENAI_COMPATIBLE: dict[str, Hyperparameter] = {
    "n_epochs": Hyperparameter(_INT, 1),
    "learning_rate": Hyperparameter(_FLOAT, 0),
    "batch_size": Hyperparameter(_INT, 1),
    "warmup_ratio": Hyperparameter(_FLOAT, 0, 1),
    "n_checkpoints": Hyperparameter(_INT, 1),
    "dpo_beta": Hyperparameter(_FLOAT, 0),
}


def accepted_hyperparameters(provider: ProviderKind, base_model: str) -> dict[str, Hyperparameter] | None:
    """The hyperparameters ``provider`` documents for ``base_model`` (Bedrock: per model family); None for
    SageMaker, whose names each hub model's recipe sets."""
    if provider is ProviderKind.SAGEMAKER:
        return None
    if provider is ProviderKind.OPENAI_COMPATIBLE:
        return _OPENAI_COMPATIBLE
    for family, accepted in _BEDROCK.items():
        if family_matches(family, base_model):
            return accepted
    raise Unsupported(
        f"Bedrock model customization documents hyperparameters only for {', '.join(_BEDROCK)} models, "
        f"and base model {base_model} is none of them: choose a Nova, Llama 3.1 or Claude 3 Haiku base model"
    )


def _recipe_hyperparameters(values: Mapping[str, str | int | float]) -> dict[str, str]:
    """SageMaker's hyperparameters as the strings its HyperParameters map takes, within its limits."""
    problems: list[str] = []
    if len(values) > SAGEMAKER_MAX_HYPERPARAMETERS:
        problems.append(
            f"{len(values)} hyperparameters are more than the {SAGEMAKER_MAX_HYPERPARAMETERS} it takes"
        )
    checked: dict[str, str] = {}
    for name, value in values.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        if not name or len(name) > _SAGEMAKER_MAX_NAME:
            problems.append(f"a hyperparameter name must be 1 to {_SAGEMAKER_MAX_NAME} characters")
        elif len(text) > _SAGEMAKER_MAX_VALUE:
            problems.append(f"{name}'s value is longer than {_SAGEMAKER_MAX_VALUE} characters")
        else:
            checked[name] = text
    if problems:
        raise Unsupported(
            f"{'; '.join(problems)}: SageMaker takes the names the base model's recipe documents, as text"
        )
    return checked


def check_hyperparameters(
    provider: ProviderKind, base_model: str, values: Mapping[str, str | int | float]
) -> dict[str, str]:
    """``values`` checked against what ``provider`` documents for ``base_model``, as the strings the job
    is sent. Raises :class:`Unsupported` naming every problem and the accepted names and ranges."""
    accepted = accepted_hyperparameters(provider, base_model)
    if accepted is None:
        return _recipe_hyperparameters(values)
    checked: dict[str, str] = {}
    problems: list[str] = []
    for name, value in values.items():
        spec = accepted.get(name)
        if spec is None:
            problems.append(f"{name} is not one of its hyperparameters")
            continue
        text = _checked_value(spec, value)
        if text is None:
            problems.append(f"{name}={value!r} is outside {spec.describe(name)}")
        else:
            checked[name] = text
    if problems:
        names = "; ".join(spec.describe(name) for name, spec in accepted.items())
        raise Unsupported(
            f"{'; '.join(problems)}. For base model {base_model} {provider} accepts: {names}: "
            "fix the hyperparameters, or leave them out to take the provider's defaults"
        )
    return checked


def _checked_value(spec: Hyperparameter, value: str | int | float) -> str | None:
    """``value`` written as the provider reads it, or None when it is not of ``spec``'s type and range."""
    if spec.kind is bool:
        if isinstance(value, bool):
            return "true" if value else "false"
        text = str(value).strip().lower()
        return text if text in ("true", "false") else None
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    if spec.kind is int:
        if not number.is_integer():
            return None
        number = int(number)
    if (spec.low is not None and number < spec.low) or (spec.high is not None and number > spec.high):
        return None
    return str(int(number)) if spec.kind is int else repr(float(number))


def typed_hyperparameters(
    provider: ProviderKind, base_model: str, values: Mapping[str, str]
) -> dict[str, object]:
    """Checked string hyperparameters back as JSON values, for providers that take typed fields."""
    accepted = accepted_hyperparameters(provider, base_model)
    if accepted is None:
        return dict(values)
    typed: dict[str, object] = {}
    for name, text in values.items():
        kind = accepted[name].kind
        if kind is bool:
            typed[name] = text == "true"
        elif kind is int:
            typed[name] = int(text)
        else:
            typed[name] = float(text)
    return typed
