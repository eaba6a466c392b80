"""What ``/preparations/{id}/packages`` and ``/packages`` do, on the in-memory fakes: one package per
preparation state and profile, built once (again after a failed build), downloaded by its owner."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.bucket_layout import package_key
from benchgen.bundle.spec import SelectionCriterion
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.requests.errors import ApiError, Conflict, Forbidden
from benchgen.requests.packages import package_view, request_package
from benchgen.training.package import package_id
from benchgen.vocabulary import Method
from tests.api_services import TTL, Events, memory_services
from tests.fakes import MemoryEnvironments, MemoryPackages, MemoryPreparations, MemoryStarter

PACKAGE_ID = package_id("state", "openai-chat")


def _preparation(**fields: Any) -> PreparationRecord:
    values: dict[str, Any] = {
        "preparation_id": "prep-1",
        "owner": "alice",
        "status": PreparationStatus.READY,
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": Method.DEMONSTRATION,
        "selection": SelectionCriterion.ALL_ITEMS,
        "run_ids": ["r1"],
        "base_model": "example-base",
        "state_hash": "state",
        "examples_key": "preparations/prep-1/examples.jsonl",
        "held_out_key": "preparations/prep-1/held_out.jsonl",
        "coverage_key": "preparations/prep-1/coverage.json",
    }
    return PreparationRecord.model_validate(values | fields)


def _package(**fields: Any) -> PackageRecord:
    values: dict[str, Any] = {
        "package_id": PACKAGE_ID,
        "preparation_id": "prep-1",
        "owner": "alice",
        "profile": "openai-chat",
        "state_hash": "state",
        "package_key": package_key(PACKAGE_ID),
    }
    return PackageRecord.model_validate(values | fields)


ENVIRONMENT = EnvironmentRecord(
    environment_id="gsm8k",
    version="1",
    status=EnvironmentStatus.REGISTERED,
    bundle_key="environments/gsm8k/1/bundle.zip",
)


class World:
    """Alice's Ready preparation of a registered version, the packages requested and the builds started."""

    def __init__(
        self,
        *packages: PackageRecord,
        preparation: PreparationRecord | None = None,
        environments: MemoryEnvironments | None = None,
        starter: MemoryStarter | None = None,
    ) -> None:
        self.packages = MemoryPackages(*packages)
        self.starter = starter or MemoryStarter()
        self.events = Events()
        self.services = memory_services(
            preparations=MemoryPreparations(preparation or _preparation()),
            environments=environments if environments is not None else MemoryEnvironments(ENVIRONMENT),
            packages=self.packages,
            starter=self.starter,
            events=self.events,
        )


def test_a_new_package_is_recorded_building_and_its_build_started_named_by_its_id() -> None:
    world = World()

    package, created = request_package("prep-1", "openai-chat", owner="alice", services=world.services)

    assert (package.package_id, package.status, created) == (PACKAGE_ID, PackageStatus.BUILDING, True)
    task = world.starter.started[PACKAGE_ID]
    assert (task["profile"], task["bundle"]["key"]) == ("openai-chat", "environments/gsm8k/1/bundle.zip")
    assert world.events == ["PackageRequested"]


def test_the_same_request_for_a_ready_package_answers_it_and_starts_nothing() -> None:
    world = World(_package(status=PackageStatus.READY))

    package, created = request_package("prep-1", "openai-chat", owner="alice", services=world.services)

    assert (package.status, created) == (PackageStatus.READY, False)
    assert world.starter.started == {}


def test_a_package_whose_build_failed_is_built_again_as_its_next_attempt() -> None:
    world = World(_package(status=PackageStatus.FAILED, reason="out of time"))

    package, created = request_package("prep-1", "openai-chat", owner="alice", services=world.services)

    assert (package.status, package.attempt, package.reason, created) == (
        PackageStatus.BUILDING,
        2,
        None,
        True,
    )
    assert list(world.starter.started) == [f"{PACKAGE_ID}-2"]


def test_an_unknown_profile_is_refused_naming_the_profiles() -> None:
    with pytest.raises(ApiError, match="there is no export profile 'csv': choose one of openai-chat, "):
        request_package("prep-1", "csv", owner="alice", services=World().services)


def test_a_preparation_that_is_not_ready_is_refused_saying_why() -> None:
    failed = _preparation(status=PreparationStatus.FAILED, failure_reason="no examples")

    with pytest.raises(Conflict) as refused:
        request_package("prep-1", "openai-chat", owner="alice", services=World(preparation=failed).services)

    assert str(refused.value) == "preparation prep-1 failed (no examples): it has no examples"


def test_a_package_of_this_state_and_profile_that_is_someone_elses_is_refused() -> None:
    world = World(_package(owner="bob"))

    with pytest.raises(Forbidden) as refused:
        request_package("prep-1", "openai-chat", owner="alice", services=world.services)

    assert str(refused.value) == f"package {PACKAGE_ID} of this state and profile belongs to another user"


def test_a_preparation_of_a_version_no_longer_registered_is_refused() -> None:
    world = World(environments=MemoryEnvironments())

    with pytest.raises(Conflict) as refused:
        request_package("prep-1", "openai-chat", owner="alice", services=world.services)

    assert str(refused.value) == (
        "environment gsm8k version 1 of preparation prep-1 is no longer registered: register it again to "
        "package"
    )


def test_a_build_that_cannot_start_fails_the_package_saying_to_ask_again_later() -> None:
    world = World(starter=MemoryStarter(down=ConnectionError("unreachable")))

    with pytest.raises(ConnectionError):
        request_package("prep-1", "openai-chat", owner="alice", services=world.services)

    stored = world.packages.records[PACKAGE_ID]
    assert (stored.status, stored.reason) == (
        PackageStatus.FAILED,
        "the package build could not be started; request it again later",
    )


def test_a_ready_package_is_read_with_a_short_lived_download_url_by_its_owner_only() -> None:
    services = World(_package(status=PackageStatus.READY)).services

    view = package_view(PACKAGE_ID, owner="alice", services=services)

    assert view.download_url == (
        f"https://bucket.test/packages/{PACKAGE_ID}.zip?get&expires={TTL}&download={PACKAGE_ID}.zip"
    )
    assert view.expires_in == TTL
    with pytest.raises(Forbidden, match="only the package's owner can read it"):
        package_view(PACKAGE_ID, owner="bob", services=services)
