"""The package pipeline's BuildPackage step over the in-memory ports: it records the package it builds,
or the profile's refusal, or the pipeline's failure, and never rewrites a package that left Building."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from benchgen.finetune.split import Split
from benchgen.records import PackageRecord, PackageStatus
from benchgen.steps.keys import package_key, preparation_key
from benchgen.steps.package import (
    PackageNotBuilding,
    PackageTask,
    build_package_step,
    record_package_failure,
)
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
from benchgen.training.package import package_id
from tests.fakes import MemoryPackages, MemoryStore
from tests.unit.preparations import example, held, info, standard, write_preparation

PROFILE = "trl-sft"
STATE = "ab" * 32
PID = package_id(STATE, PROFILE)


def _world(
    prepared: Path, status: PackageStatus = PackageStatus.BUILDING
) -> tuple[MemoryStore, MemoryPackages]:
    store = MemoryStore(
        {
            preparation_key("prep-1", name): (prepared / name).read_bytes()
            for name in (EXAMPLES_NAME, HELD_OUT_NAME)
        }
    )
    packages = MemoryPackages(
        PackageRecord(
            package_id=PID,
            preparation_id="prep-1",
            owner="user-a",
            profile=PROFILE,
            state_hash=STATE,
            package_key=package_key(PID),
            status=status,
        )
    )
    return store, packages


def _build(tmp_path: Path, store: MemoryStore, packages: MemoryPackages) -> dict[str, object]:
    task = PackageTask(
        package_id=PID, preparation_id="prep-1", profile=PROFILE, preparation=info(state_hash=STATE)
    )
    return build_package_step(task, store=store, packages=packages, workdir=tmp_path / "work")


def test_a_built_package_is_uploaded_and_recorded_ready_with_its_digest_size_and_files(
    tmp_path: Path,
) -> None:
    store, packages = _world(standard(tmp_path / "prep"))

    answer = _build(tmp_path, store, packages)

    stored = store.objects[package_key(PID)]
    record = packages.get(PID)
    assert record is not None and record.status is PackageStatus.READY
    assert (record.sha256, record.size) == (hashlib.sha256(stored).hexdigest(), len(stored))
    assert set(record.files) == {"train.jsonl", "validation.jsonl", "test.jsonl"}
    assert answer["refused"] is False
    assert answer["package"] == {
        "sha256": record.sha256,
        "size": record.size,
        "files": record.model_dump()["files"],
    }


def test_a_refusal_is_recorded_on_the_package_and_answered(tmp_path: Path) -> None:
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(10)] + [example("h001", Split.TRAIN)]
    store, packages = _world(write_preparation(tmp_path / "prep", examples, [held("h001")]))

    answer = _build(tmp_path, store, packages)

    record = packages.get(PID)
    assert record is not None and record.status is PackageStatus.REFUSED
    assert record.reason is not None and record.reason.startswith(
        "1 training or validation examples come from"
    )
    assert answer == {"refused": True, "reason": record.reason, "package": None}
    assert package_key(PID) not in store.objects


@pytest.mark.parametrize("status", [PackageStatus.READY, PackageStatus.REFUSED, PackageStatus.FAILED])
def test_a_package_that_left_building_keeps_what_it_has(tmp_path: Path, status: PackageStatus) -> None:
    store, packages = _world(standard(tmp_path / "prep"), status)
    before = packages.get(PID)

    with pytest.raises(PackageNotBuilding, match=f"package {PID} is no longer Building"):
        _build(tmp_path, store, packages)
    with pytest.raises(PackageNotBuilding):
        record_package_failure(PID, "lost", packages=packages)

    assert packages.get(PID) == before


def test_a_caught_failure_is_recorded_on_the_package(tmp_path: Path) -> None:
    _, packages = _world(standard(tmp_path / "prep"))

    record_package_failure(PID, "BuildPackage ran out of time", packages=packages)

    record = packages.get(PID)
    assert record is not None
    assert (record.status, record.reason) == (PackageStatus.FAILED, "BuildPackage ran out of time")
