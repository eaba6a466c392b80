"""The adapters a function needs, built once per cold start from its settings."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from benchgen.aws import clients
from benchgen.aws.events import EventPublisher
from benchgen.aws.executions import ExecutionStarter
from benchgen.aws.storage import ObjectStore
from benchgen.aws.tables import DatasetsRepo, EnvironmentsRepo, RunsRepo
from benchgen.settings import Settings, load_settings


@dataclass
class Adapters:
    settings: Settings

    @cached_property
    def store(self) -> ObjectStore:
        return ObjectStore(self.settings.data_bucket)

    @cached_property
    def runs(self) -> RunsRepo:
        return RunsRepo(self.settings.runs_table)

    @cached_property
    def environments(self) -> EnvironmentsRepo:
        return EnvironmentsRepo(self.settings.environments_table)

    @cached_property
    def datasets(self) -> DatasetsRepo:
        return DatasetsRepo(self.settings.datasets_table)

    @cached_property
    def publisher(self) -> EventPublisher:
        return EventPublisher(self.settings.event_bus_name)

    @cached_property
    def starter(self) -> ExecutionStarter:
        if not self.settings.state_machine_arn:
            raise RuntimeError("STATE_MACHINE_ARN is not set: only the score function starts executions")
        return ExecutionStarter(self.settings.state_machine_arn)


_cached: Adapters | None = None


def adapters() -> Adapters:
    """The function's adapters, made on first use (the cold start) and reused while the sandbox lives."""
    global _cached
    if _cached is None:
        _cached = Adapters(load_settings())
    return _cached


def reset() -> None:
    """Forget the adapters and clients (the local cloud and tests call this when a cloud starts or stops)."""
    global _cached
    _cached = None
    clients.reset_clients()
