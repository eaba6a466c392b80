"""What a provider kind is: the one class each kind's module fills in, as data and pure functions.

A kind's module (``benchgen/providers/<kind>.py``) subclasses :class:`ProviderDefinition` and names one
instance ``PROVIDER``; ``benchgen.providers.registry`` finds it by the kind's name. Everything the rest of
BenchGen asks of a kind is asked here, so no other module branches on kinds: the checks read its
capabilities and gaps, the connections its fields, the training steps its statuses, hyperparameters and
upload, the live runs its description, the evaluations whether its result answers, and the CDK code its
IAM needs. Calls to the provider itself are its adapter's (``benchgen/aws/providers/<kind>.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from types import MappingProxyType

from benchgen.providers.batch import BatchApi
from benchgen.providers.capabilities import ConnectionProfile
from benchgen.records.runs import LiveModel
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method, ProviderKind


@dataclass(frozen=True)
class Grant:
    """One IAM statement a kind's adapter needs, and why its resources are as wide as they are.

    ``resources`` are ARN patterns with ``{partition}`` and ``{account}`` for the deployment's own;
    ``reason`` is the acknowledgement cdk-nag records for each resource that holds a wildcard.
    """

    actions: tuple[str, ...]
    resources: tuple[str, ...]
    reason: str

    def arns(self, *, partition: str, account: str) -> list[str]:
        return [resource.format(partition=partition, account=account) for resource in self.resources]


@dataclass(frozen=True)
class IamNeeds:
    """What a kind's adapter needs of IAM, by what the function holding the grant does."""

    #: the functions that call its models (a live run's deployment check and its shards)
    calls_models: tuple[Grant, ...] = ()
    #: the function that starts, reads and stops its training jobs
    runs_jobs: tuple[Grant, ...] = ()
    #: the service the connection's role is passed to, when the provider assumes it to read the files
    assumes_role: str | None = None
    #: the functions that submit and read its batch inference jobs
    runs_batches: tuple[Grant, ...] = ()


class ProviderDefinition(ABC):
    """Everything one provider kind is. Subclasses set the class attributes and the abstract methods."""

    kind: ProviderKind
    #: who the provider is, as a sentence names it ("Bedrock model customization")
    title: str
    #: the most it can do: a connection's profile may only narrow it
    capabilities: ConnectionProfile
    #: why it lacks a training method, where its documentation says why
    method_gaps: Mapping[Method, str] = MappingProxyType({})
    #: why it trains only the model families it names; None: "<title> trains <families> only"
    family_gap: str | None = None
    #: how its models answer a live run
    inference_path: str
    #: its documented job statuses, lowercase with underscores for spaces, as ours
    statuses: Mapping[str, TrainingStatus]
    #: the connection fields it needs, and those it also takes (``benchgen.providers.connections``)
    requires: frozenset[str]
    accepts: frozenset[str] = frozenset()
    #: a connection field live runs need besides those it requires, and what lacking it means
    inference_field: str | None = None
    inference_gap: str = ""
    #: whether training files go to its own file upload (which answers file ids) rather than to the data
    #: bucket, whose S3 URIs it reads
    uploads_files: bool = False
    iam: IamNeeds = IamNeeds()
    #: the module (``benchgen.providers.<name>``) whose ``BATCH`` is its batch inference, if it has one;
    #: without, why a live run cannot go to batch and what would serve instead
    batch_module: str | None = None
    batch_gap: str = ""

    def batch(self) -> BatchApi | None:
        """Its batch inference (imported when first asked for: it builds on the kind's own shapes)."""
        if self.batch_module is None:
            return None
        found: BatchApi = import_module(f"benchgen.providers.{self.batch_module}").BATCH
        return found

    def status(self, provider_status: str) -> TrainingStatus:
        """Our status for one of its own: case and spacing do not matter, and a value it did not document
        counts as still running (a poll later sees where it ends; :meth:`status_note` says so)."""
        return self.statuses.get(_status_key(provider_status), TrainingStatus.RUNNING)

    def status_note(self, provider_status: str) -> str | None:
        """A sentence for the timeline when ``provider_status`` is not one BenchGen knows; None otherwise."""
        if _status_key(provider_status) in self.statuses:
            return None
        return (
            f"{self.kind} reported status {provider_status!r}, which BenchGen does not know: counted as "
            "still running until the provider reports an end"
        )

    @abstractmethod
    def check_hyperparameters(
        self, base_model: str, values: Mapping[str, str | int | float]
    ) -> dict[str, str]:
        """``values`` checked against what it documents for ``base_model``, as the strings the job is
        sent; :class:`~benchgen.errors.Unsupported` naming every problem otherwise."""

    @abstractmethod
    def where(self, live: LiveModel) -> str:
        """Which model a live run asks, and where, in a few words for its messages."""

    def result_not_served(self, result_model: str | None) -> str | None:
        """Why a training run's resulting model does not answer through the connection it trained on,
        with what to do instead; None when it does (called by that name)."""
        return None


def _status_key(provider_status: str) -> str:
    return provider_status.strip().lower().replace(" ", "_")
