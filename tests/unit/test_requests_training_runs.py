"""What ``/training-runs`` does, on the in-memory fakes: a launch checks the caller's Ready package and
connection, records the run Queued and starts its pipeline once; a cancel is asked of a run not ended."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.bucket_layout import package_key
from benchgen.bundle.spec import SelectionCriterion
from benchgen.providers.checks import narrow
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.packages import PackageFile, PackageRecord, PackageStatus
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.records.training_runs import StatusChange, TrainingRunRecord, TrainingStatus
from benchgen.requests.errors import Conflict, NotFound
from benchgen.requests.schemas.training_runs import CreateTrainingRunRequest
from benchgen.requests.training_runs import (
    cancel_training_run,
    launch_training_run,
    list_training_runs,
)
from benchgen.vocabulary import Method, ProviderKind
from tests.api_services import Events, memory_services
from tests.fakes import (
    MemoryConnections,
    MemoryPackages,
    MemoryPreparations,
    MemoryStarter,
    MemoryTrainingRuns,
)

# Answered outside Lambda, a create request has no deadline to hold its Idempotency-Key until, as powertools
# warns: the key is held for the whole window instead.
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left:UserWarning")

OPENAI_COMPATIBLE = ProviderKind("openai-compatible")


def _package(owner: str = "alice", status: PackageStatus = PackageStatus.READY) -> PackageRecord:
    return PackageRecord(
        package_id="pkg-1",
        preparation_id="prep-1",
        owner=owner,
        profile="openai-chat",
        status=status,
        state_hash="state",
        package_key=package_key("pkg-1"),
        sha256="0" * 64,
        size=10,
        files={"train.jsonl": PackageFile(sha256="1" * 64, rows=20, bytes=100)},
    )


def _preparation() -> PreparationRecord:
    return PreparationRecord(
        preparation_id="prep-1",
        owner="alice",
        status=PreparationStatus.READY,
        environment_id="gsm8k",
        environment_version="1",
        method=Method.DEMONSTRATION,
        selection=SelectionCriterion.ALL_ITEMS,
        run_ids=["r1"],
        base_model="example-base",
        examples_key="preparations/prep-1/examples.jsonl",
        held_out_key="preparations/prep-1/held_out.jsonl",
        coverage_key="preparations/prep-1/coverage.json",
    )


def _connection() -> ConnectionRecord:
    return ConnectionRecord(
        connection_id="conn-1",
        owner="alice",
        name="training",
        provider=OPENAI_COMPATIBLE,
        base_url="https://api.together.example/v1",
        profile=narrow(OPENAI_COMPATIBLE, None),
    )


def _training_run(training_run_id: str, **fields: Any) -> TrainingRunRecord:
    values: dict[str, Any] = {
        "training_run_id": training_run_id,
        "owner": "alice",
        "connection_id": "conn-1",
        "provider": OPENAI_COMPATIBLE,
        "package_id": "pkg-1",
        "package_sha256": "0" * 64,
        "package_profile": "openai-chat",
        "preparation_id": "prep-1",
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": Method.DEMONSTRATION,
        "base_model": "example-base",
        "base_model_source": "package",
        "timeline": [StatusChange(status=TrainingStatus.QUEUED)],
        "job_name": f"job-{training_run_id}",
    }
    return TrainingRunRecord.model_validate(values | fields)


def _request(**fields: Any) -> CreateTrainingRunRequest:
    return CreateTrainingRunRequest.model_validate(
        {"package_id": "pkg-1", "connection_id": "conn-1", **fields}
    )


class World:
    """A Ready package of alice's preparation, her connection, and the training runs launched on them."""

    def __init__(self, *, package: PackageRecord | None = None, starter: MemoryStarter | None = None) -> None:
        self.training_runs = MemoryTrainingRuns()
        self.starter = starter or MemoryStarter()
        self.events = Events()
        self.services = memory_services(
            packages=MemoryPackages(package or _package()),
            preparations=MemoryPreparations(_preparation()),
            connections=MemoryConnections(_connection()),
            training_runs=self.training_runs,
            starter=self.starter,
            events=self.events,
        )


def test_a_launch_records_the_run_queued_and_starts_its_pipeline_once_training_the_packages_model() -> None:
    world = World()

    launched = launch_training_run(_request(), owner="alice", services=world.services)

    run = launched.training_run
    assert (run.status, run.base_model, run.base_model_source) == (
        TrainingStatus.QUEUED,
        "example-base",
        "package",
    )
    assert world.starter.started == {run.training_run_id: {"training_run_id": run.training_run_id}}
    # and the answer says what is trained, from where, on which base model: a package, not a dataset
    assert (launched.notices, launched.warnings) == (
        [
            "package pkg-1 (openai-chat, prepared from gsm8k 1 in preparation prep-1) trains example-base, "
            "the base model recorded with its preparation: the launch named none"
        ],
        [],
    )
    assert world.events == ["TrainingRunLaunched"]


def test_another_base_model_is_trained_with_a_warning_naming_both() -> None:
    world = World()

    launched = launch_training_run(_request(base_model="other-base"), owner="alice", services=world.services)

    assert launched.training_run.base_model_source == "request"
    assert launched.warnings == [
        "base model other-base overrides example-base, the base model recorded with the package's "
        "preparation: the trained model is compared against the one you name"
    ]


def test_another_users_package_is_answered_like_a_missing_one() -> None:
    world = World(package=_package(owner="bob"))

    with pytest.raises(NotFound) as refused:
        launch_training_run(_request(), owner="alice", services=world.services)

    assert str(refused.value) == "no package 'pkg-1' of yours: check the id (GET /packages/{id})"
    assert world.training_runs.records == {}


def test_a_package_that_is_not_ready_is_refused_naming_its_status() -> None:
    world = World(package=_package(status=PackageStatus.BUILDING))

    with pytest.raises(Conflict) as refused:
        launch_training_run(_request(), owner="alice", services=world.services)

    assert str(refused.value) == "package pkg-1 is Building, not Ready: train on a Ready package"


def test_a_run_whose_pipeline_cannot_start_is_failed_saying_to_launch_it_again() -> None:
    world = World(starter=MemoryStarter(down=ConnectionError("unreachable")))

    with pytest.raises(ConnectionError):
        launch_training_run(_request(), owner="alice", services=world.services)

    (run,) = world.training_runs.records.values()
    assert (run.status, run.failure_reason) == (
        TrainingStatus.FAILED,
        "the training pipeline could not be started: launch the training run again",
    )


def test_the_same_idempotency_key_twice_gives_one_training_run_and_one_execution() -> None:
    world = World()

    first = launch_training_run(_request(), owner="alice", services=world.services, idempotency_key="k1")
    again = launch_training_run(_request(), owner="alice", services=world.services, idempotency_key="k1")

    assert again.training_run == first.training_run
    assert list(world.starter.started) == [first.training_run.training_run_id]


def test_a_cancel_is_asked_of_a_running_training_run() -> None:
    runs = MemoryTrainingRuns(_training_run("train-1", status=TrainingStatus.RUNNING))
    events = Events()

    cancelled = cancel_training_run(
        "train-1", owner="alice", services=memory_services(training_runs=runs, events=events)
    )

    assert cancelled.cancel_requested is True
    assert events == ["TrainingRunCancelRequested"]


def test_an_ended_training_run_has_nothing_to_cancel() -> None:
    runs = MemoryTrainingRuns(_training_run("train-1", status=TrainingStatus.SUCCEEDED))

    with pytest.raises(Conflict) as refused:
        cancel_training_run("train-1", owner="alice", services=memory_services(training_runs=runs))

    assert str(refused.value) == "training run train-1 is already Succeeded: nothing to cancel"


def test_another_users_training_run_is_answered_like_a_missing_one() -> None:
    runs = MemoryTrainingRuns(_training_run("train-1", owner="bob"))

    with pytest.raises(NotFound) as refused:
        cancel_training_run("train-1", owner="alice", services=memory_services(training_runs=runs))

    assert str(refused.value) == "no training run 'train-1' of yours: GET /training-runs lists yours"


def test_the_list_by_preparation_holds_only_its_owners_training_runs_newest_first() -> None:
    runs = MemoryTrainingRuns(
        _training_run("train-1", created_at="2026-01-01T00:00:00Z"),
        _training_run("train-2", created_at="2026-01-02T00:00:00Z"),
        _training_run("train-3", preparation_id="prep-2"),
        _training_run("train-4", owner="bob"),
    )

    listed = list_training_runs(
        owner="alice",
        services=memory_services(training_runs=runs),
        preparation_id="prep-1",
        limit=20,
        next_token=None,
    )

    assert [run.training_run_id for run in listed.items] == ["train-2", "train-1"]
