"""One provider training job: what it needs, what a poll saw, and the fixed name it is keyed by.

A job is keyed by a fixed name derived from the training run (:func:`job_name_for`), so starting it twice
finds the first job instead of making a second one. Each kind's module builds its requests from a
:class:`JobSpec` and reads its answers into a :class:`JobState`; its adapter makes the calls.
"""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict, Field

from benchgen.errors import BenchGenError
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
    train_uri: str  # s3://... or, for a kind that takes files through its own upload, the file's id
    validation_uri: str | None = None
    output_uri: str  # s3://bucket/training/<id>/output/ (a kind that keeps its own output ignores it)
    role_arn: str | None = None
    # A reinforcement job's grader: the package's grader.py, which defines grade(sample, item).
    grader_source: str | None = None


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
