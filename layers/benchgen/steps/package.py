"""The package pipeline's BuildPackage task: build one export package of a preparation and describe it."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from benchgen.errors import BenchGenError
from benchgen.ports.storage import ObjectStorage
from benchgen.records.bounds import clip_text
from benchgen.records.packages import PackageFiles
from benchgen.steps.keys import package_key, preparation_key
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
from benchgen.training.package import PackageRefused, PreparationInfo, build_package


class PackageTask(BaseModel):
    """The execution's input, as the API starts it: the package to build and the preparation it is of."""

    package_id: str
    preparation_id: str
    profile: str
    preparation: PreparationInfo


class BuiltPackage(BaseModel):
    """What the package record keeps of a built package; its files bounded as the record bounds them."""

    sha256: str
    size: int
    files: PackageFiles


class PackageBuild(BaseModel):
    """The task's answer: ``refused`` with its ``reason``, or the ``package`` to record."""

    refused: bool
    reason: str | None = None
    package: BuiltPackage | None = None


class PackageIdMismatch(BenchGenError):
    """The build computed another package id than the one the package was recorded under."""


def build_package_step(task: PackageTask, *, store: ObjectStorage, workdir: Path) -> PackageBuild:
    """Build the package and upload its zip; or the profile's refusal.

    A profile that refuses the preparation is an answer (the package is recorded Refused with the
    profile's message), not an error: it is the user's choice to change, not the platform's failure.
    """
    prepared = workdir / "preparation"
    for name in (EXAMPLES_NAME, HELD_OUT_NAME):
        store.download(preparation_key(task.preparation_id, name), prepared / name)
    try:
        report = build_package(prepared, task.preparation, task.profile, workdir / "package")
    except PackageRefused as refusal:
        return PackageBuild(refused=True, reason=clip_text(str(refusal)))
    if report.package_id != task.package_id:
        raise PackageIdMismatch(
            f"package {task.package_id} was requested, but preparation {task.preparation_id} in its current "
            f"state with profile {task.profile} gives package {report.package_id}: request the package again"
        )
    store.upload(report.path, package_key(report.package_id), content_type="application/zip")
    return PackageBuild(
        refused=False,
        package=BuiltPackage(sha256=report.sha256, size=report.size, files=report.files),
    )
