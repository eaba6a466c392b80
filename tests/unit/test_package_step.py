"""The package pipeline's BuildPackage step over in-memory ports: the zip it writes and the package it
records Ready, a profile's refusal recorded and answered, a rebuild that gives the same bytes, the
pipeline's failure recorded, and a package that left Building never rewritten."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from benchgen.bucket_layout import package_key, preparation_key
from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.steps.package import (
    PackageBuild,
    PackageIdMismatch,
    PackageInput,
    PackageNotBuilding,
    build_package_step,
    record_package_failure,
)
from benchgen.steps.prepare import BundleRef
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
from benchgen.training.package import package_id
from tests.fakes import MemoryPackages, MemoryStore
from tests.unit.preparations import environment_cases, info, standard
from tests.unit.run_world import BUNDLE_KEY, tiny_bundle

PREPARATION = "prep-1"


def _store(root: Path, *, train: int = 12) -> MemoryStore:
    """The bucket holding a clean preparation's examples and held-out cases, as Generate left them, and
    the registered bundle whose cases they were drawn from."""
    folder = standard(root / "preparation", train=train)
    cases = [{"id": case_id, "question": text, "answer": "19"} for case_id, text in environment_cases(folder)]
    objects = {
        preparation_key(PREPARATION, name): (folder / name).read_bytes()
        for name in (EXAMPLES_NAME, HELD_OUT_NAME)
    }
    objects[BUNDLE_KEY] = tiny_bundle(root / "environment", cases=cases)
    return MemoryStore(objects)


def _task(profile: str = "openai-chat", package: str | None = None) -> PackageInput:
    prepared = info()
    return PackageInput(
        package_id=package or package_id(prepared.state_hash, profile),
        preparation_id=PREPARATION,
        profile=profile,
        preparation=prepared,
        bundle=BundleRef(key=BUNDLE_KEY),
    )


def _building(task: PackageInput, status: PackageStatus = PackageStatus.BUILDING) -> MemoryPackages:
    """The packages table with the package recorded as the API records it before starting the build."""
    return MemoryPackages(
        PackageRecord(
            package_id=task.package_id,
            preparation_id=PREPARATION,
            owner="user-a",
            profile=task.profile,
            state_hash=task.preparation.state_hash,
            package_key=package_key(task.package_id),
            status=status,
        )
    )


def _build(
    task: PackageInput, store: MemoryStore, workdir: Path, packages: MemoryPackages | None = None
) -> PackageBuild:
    return build_package_step(
        task, store=store, packages=packages if packages is not None else _building(task), workdir=workdir
    )


def test_a_built_package_is_in_the_bucket_and_described_by_its_bytes(tmp_path: Path) -> None:
    store = _store(tmp_path)
    task = _task()

    build = _build(task, store, tmp_path / "build")

    # then the zip is at the package's key, and the answer names its sha256, size and files
    body = store.objects[package_key(task.package_id)]
    assert build.refused is False and build.reason is None and build.package is not None
    assert build.package.sha256 == hashlib.sha256(body).hexdigest()
    assert build.package.size == len(body)
    with zipfile.ZipFile(store.download(package_key(task.package_id), tmp_path / "package.zip")) as archive:
        train = archive.read("train.jsonl")
    assert build.package.files["train.jsonl"].rows == 12
    assert build.package.files["train.jsonl"].sha256 == hashlib.sha256(train).hexdigest()


def test_the_contamination_report_reads_every_held_out_question_from_the_bundle(tmp_path: Path) -> None:
    # given the standard preparation: 5 held-out cases, of which 2 left a test row
    store = _store(tmp_path)
    task = _task()

    _build(task, store, tmp_path / "build")

    with zipfile.ZipFile(store.download(package_key(task.package_id), tmp_path / "package.zip")) as archive:
        report = json.loads(archive.read("contamination.json"))
    assert (report["held_out_cases_checked"], report["held_out_cases_too_short"]) == (5, 0)


def test_building_the_package_again_gives_the_same_bytes_and_the_same_answer(tmp_path: Path) -> None:
    # given a package built once
    store = _store(tmp_path)
    first = _build(_task(), store, tmp_path / "first")
    body = store.objects[package_key(_task().package_id)]

    # when the task runs again (a retried state)
    second = _build(_task(), store, tmp_path / "second")

    # then it writes the same zip and describes it alike
    assert second == first
    assert store.objects[package_key(_task().package_id)] == body


def test_a_profile_that_refuses_the_preparation_answers_its_reason_and_writes_nothing(tmp_path: Path) -> None:
    # given a preparation of three training rows, fewer than Bedrock's Nova takes
    store = _store(tmp_path, train=3)
    task = _task("bedrock-conversation")

    build = _build(task, store, tmp_path / "build")

    assert build.refused is True and build.package is None
    assert build.reason is not None
    assert build.reason.startswith(
        "profile bedrock-conversation needs at least 8 train rows and this preparation gives 3: "
    )
    assert package_key(task.package_id) not in store.objects


def test_a_package_requested_under_another_id_is_not_written(tmp_path: Path) -> None:
    # given a request recorded under an id the preparation's current state does not give
    store = _store(tmp_path)
    task = _task(package="pkg-" + "0" * 24)

    with pytest.raises(PackageIdMismatch, match="request the package again"):
        _build(task, store, tmp_path / "build")
    assert store.uploads == []


def test_a_built_package_is_recorded_ready_with_its_digest_size_and_files(tmp_path: Path) -> None:
    task = _task()
    packages = _building(task)

    build = _build(task, _store(tmp_path), tmp_path / "build", packages)

    record = packages.get(task.package_id)
    assert record is not None and build.package is not None
    assert record.status is PackageStatus.READY
    assert (record.sha256, record.size, record.files) == (
        build.package.sha256,
        build.package.size,
        build.package.files,
    )


def test_a_refusal_is_recorded_on_the_package(tmp_path: Path) -> None:
    task = _task("bedrock-conversation")
    packages = _building(task)

    build = _build(task, _store(tmp_path, train=3), tmp_path / "build", packages)

    record = packages.get(task.package_id)
    assert record is not None
    assert (record.status, record.reason) == (PackageStatus.REFUSED, build.reason)


@pytest.mark.parametrize("status", [PackageStatus.READY, PackageStatus.REFUSED, PackageStatus.FAILED])
def test_a_package_that_left_building_keeps_what_it_has(tmp_path: Path, status: PackageStatus) -> None:
    task = _task()
    packages = _building(task, status)
    before = packages.get(task.package_id)

    with pytest.raises(PackageNotBuilding, match=f"package {task.package_id} is no longer Building"):
        _build(task, _store(tmp_path), tmp_path / "build", packages)
    with pytest.raises(PackageNotBuilding):
        record_package_failure(task.package_id, "lost", packages=packages)

    assert packages.get(task.package_id) == before


def test_a_caught_failure_is_recorded_on_the_package() -> None:
    task = _task()
    packages = _building(task)

    record_package_failure(task.package_id, "BuildPackage ran out of time", packages=packages)

    record = packages.get(task.package_id)
    assert record is not None
    assert (record.status, record.reason) == (PackageStatus.FAILED, "BuildPackage ran out of time")
