"""The API's services over the in-memory fakes of ``tests/fakes.py``, for unit tests of what a request does.

Each fake keeps its adapter's promise, so a request's test means what it would through the API function
on the local cloud; a test hands in the fakes it fills, and reads them back afterwards.
"""

from __future__ import annotations

from typing import Any

from benchgen.ports.executions import Starter
from benchgen.requests.services import ApiServices
from benchgen.settings import Settings
from tests.fakes import (
    MemoryConnections,
    MemoryDatasets,
    MemoryEnvironments,
    MemoryEvaluations,
    MemoryIdempotency,
    MemoryPackages,
    MemoryPreparations,
    MemoryRuns,
    MemoryStarter,
    MemoryStore,
    MemoryTrainingRuns,
    Published,
)

TTL = 120


def settings(**fields: Any) -> Settings:
    """Settings as a deployment hands them to the api function, with ``fields`` changed."""
    names: dict[str, Any] = {
        "data_bucket": "data",
        "environments_table": "environments",
        "runs_table": "runs",
        "connections_table": "connections",
        "datasets_table": "datasets",
        "idempotency_table": "idempotency",
        "packages_table": "packages",
        "event_bus_name": "bus",
        "preparations_table": "preparations",
        "training_runs_table": "training-runs",
        "evaluations_table": "evaluations",
        "presign_ttl_seconds": TTL,
        "account_id": "123456789012",
        "region": "us-east-1",
    }
    return Settings(**(names | fields))


class Events(list[str]):
    """The business events a request counted, in order."""

    def record(self, name: str) -> None:
        self.append(name)


def memory_services(
    *,
    runs: MemoryRuns | None = None,
    environments: MemoryEnvironments | None = None,
    connections: MemoryConnections | None = None,
    datasets: MemoryDatasets | None = None,
    store: MemoryStore | None = None,
    publisher: Published | None = None,
    idempotency: MemoryIdempotency | None = None,
    packages: MemoryPackages | None = None,
    preparations: MemoryPreparations | None = None,
    training_runs: MemoryTrainingRuns | None = None,
    evaluations: MemoryEvaluations | None = None,
    starter: Starter | None = None,
    events: Events | None = None,
    **changed_settings: Any,
) -> ApiServices:
    """ApiServices over fakes: those given, new empty ones for the rest; every state machine is ``starter``
    (a MemoryStarter unless given)."""
    started = starter if starter is not None else MemoryStarter()
    return ApiServices(
        settings=settings(**changed_settings),
        connections=connections if connections is not None else MemoryConnections(),
        environments=environments if environments is not None else MemoryEnvironments(),
        runs=runs if runs is not None else MemoryRuns(),
        datasets=datasets if datasets is not None else MemoryDatasets(),
        store=store if store is not None else MemoryStore(),
        publisher=publisher if publisher is not None else Published(),
        idempotency=idempotency if idempotency is not None else MemoryIdempotency(),
        packages=packages if packages is not None else MemoryPackages(),
        package_starter=started,
        preparations=preparations if preparations is not None else MemoryPreparations(),
        preparation_starter=started,
        training_runs=training_runs if training_runs is not None else MemoryTrainingRuns(),
        training_starter=started,
        evaluations=evaluations if evaluations is not None else MemoryEvaluations(),
        evaluation_starter=started,
        inference_starter=started,
        record_event=(events if events is not None else Events()).record,
    )
