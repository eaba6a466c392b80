"""The services an API request reaches: settings, and the ports the pipeline steps use too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Only named: the API's start need not import the ports and the records they name (its routes import
    # those they use, with their first request), nor powertools' idempotency package, which imports boto3.
    from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer

    from benchgen.ports.connections import ConnectionsStore
    from benchgen.ports.datasets import DatasetsCatalog
    from benchgen.ports.environments import EnvironmentsCatalog
    from benchgen.ports.evaluations import EvaluationsCatalog
    from benchgen.ports.events import Publisher
    from benchgen.ports.executions import Starter
    from benchgen.ports.packages import PackagesCatalog
    from benchgen.ports.preparations import PreparationsCatalog
    from benchgen.ports.runs import RunsStore
    from benchgen.ports.storage import SharedStorage
    from benchgen.ports.training_runs import TrainingRunsCatalog
    from benchgen.settings import Settings


def _ignore(_: str) -> None:
    return None


@dataclass(frozen=True)
class ApiServices:
    """What the requests reach: the API function hands in its adapters, a unit test the in-memory fakes."""

    settings: Settings
    connections: ConnectionsStore
    environments: EnvironmentsCatalog
    runs: RunsStore
    datasets: DatasetsCatalog
    store: SharedStorage
    publisher: Publisher
    #: Where the create requests keep their Idempotency-Keys (powertools' idempotency table).
    idempotency: BasePersistenceLayer
    packages: PackagesCatalog
    #: Starts the package state machine; None where the function is not told its ARN.
    package_starter: Starter | None
    preparations: PreparationsCatalog
    #: Starts the preparation state machine; None where the function is not told its ARN.
    preparation_starter: Starter | None
    training_runs: TrainingRunsCatalog
    #: Starts the training state machine; None where the function is not told its ARN.
    training_starter: Starter | None
    evaluations: EvaluationsCatalog
    #: Starts the evaluation state machine; None where the function is not told its ARN.
    evaluation_starter: Starter | None
    #: Starts a live run's InferencePipeline; None where the function is not told its ARN.
    inference_starter: Starter | None
    #: Called with a business event name ("RunCreated", ...) so the handler can count it as a metric.
    record_event: Callable[[str], None] = field(default=_ignore)

    @property
    def ttl(self) -> int:
        return self.settings.presign_ttl_seconds
