"""The package pipeline's BuildPackage step over an in-memory bucket: the zip it writes, the package it
describes, a profile's refusal as an answer, and a rebuild that gives the same bytes."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from benchgen.aws.tables.packages import build_answer
from benchgen.steps.keys import package_key, preparation_key
from benchgen.steps.package import PackageBuild, PackageIdMismatch, PackageTask, build_package_step
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
from benchgen.training.package import package_id
from tests.fakes import MemoryStore
from tests.unit.preparations import info, standard

PREPARATION = "prep-1"


def _store(root: Path, *, train: int = 12) -> MemoryStore:
    """The bucket holding a clean preparation's examples and held-out cases, as Generate left them."""
    folder = standard(root / "preparation", train=train)
    return MemoryStore(
        {
            preparation_key(PREPARATION, name): (folder / name).read_bytes()
            for name in (EXAMPLES_NAME, HELD_OUT_NAME)
        }
    )


def _task(profile: str = "openai-chat", package: str | None = None) -> PackageTask:
    prepared = info()
    return PackageTask(
        package_id=package or package_id(prepared.state_hash, profile),
        preparation_id=PREPARATION,
        profile=profile,
        preparation=prepared,
    )


def _build(task: PackageTask, store: MemoryStore, workdir: Path) -> PackageBuild:
    return build_package_step(task, store=store, workdir=workdir)


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


def test_the_state_machine_reads_the_size_as_text_and_the_files_as_attribute_values(tmp_path: Path) -> None:
    build = _build(_task(), _store(tmp_path), tmp_path / "build")
    assert build.package is not None

    answer = build_answer(build)

    assert answer["refused"] is False and answer["reason"] is None
    assert answer["package"]["size"] == str(build.package.size)
    assert answer["package"]["files"]["train.jsonl"] == {
        "M": {
            "sha256": {"S": build.package.files["train.jsonl"].sha256},
            "rows": {"N": "12"},
            "bytes": {"N": str(build.package.files["train.jsonl"].bytes)},
        }
    }
