"""Each provider kind's adapter, found by the kind's name: the ``ADAPTER`` of
``benchgen/aws/providers/<kind>.py`` (dashes read as underscores), imported when first asked for.

What the steps get from here is always redacted (``redaction.py``): whatever a provider says comes out
without the connection's key or anything shaped like a credential, whichever kind said it.
"""

from __future__ import annotations

from importlib import import_module

from benchgen.aws.providers.redaction import (
    connection_secrets,
    redacted_batches,
    redacted_jobs,
    redacted_model,
)
from benchgen.inference.model import Model
from benchgen.ports.providers import BatchJobs, ProviderAdapter, TrainingJobs
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.runs import LiveModel
from benchgen.vocabulary import ProviderKind, Sampling

PACKAGE = "benchgen.aws.providers"


def adapter(kind: str) -> ProviderAdapter:
    """The adapter of ``kind`` (a :class:`ProviderKind` or its name)."""
    module = import_module(f"{PACKAGE}.{ProviderKind(kind).module}")
    found: ProviderAdapter = module.ADAPTER
    return found


def jobs_for(connection: ConnectionRecord) -> TrainingJobs:
    """The training jobs of ``connection``'s provider."""
    jobs = adapter(connection.provider).training_jobs(connection)
    return redacted_jobs(jobs, connection_secrets(connection.secret_arn, keep=False))


def model_for(live: LiveModel, sampling: Sampling) -> Model:
    """The model a live run asks, through its kind's adapter; an API key is read from Secrets Manager
    here, now."""
    model = adapter(live.provider).model(live, sampling)
    return redacted_model(model, connection_secrets(live.secret_arn, keep=True))


def batch_for(live: LiveModel) -> BatchJobs:
    """The batch jobs of a live run's provider; an API key is read from Secrets Manager at each call."""
    jobs = adapter(live.provider).batch_jobs(live)
    return redacted_batches(jobs, connection_secrets(live.secret_arn, keep=False))
