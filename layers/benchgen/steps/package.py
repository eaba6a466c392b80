"""The package pipeline's BuildPackage task: build one export package of a preparation and record it.

The task records every move of the package out of Building (Ready, Refused, or the pipeline's caught
failure) through the packages table's module; the state machine only branches on the answer and
announces PackageReady.
"""

from __future__ import annotations

from pathlib import Path

from benchgen.bucket_layout import package_key, preparation_key
from benchgen.environment import open_environment
from benchgen.errors import BenchGenError
from benchgen.lazy_model import LazyModel
from benchgen.ports.packages import PackagesStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.bounds import clip_text
from benchgen.records.judge_calibration import JudgeCalibration
from benchgen.records.packages import PackageFiles, PackageStatus
from benchgen.steps.prepare import BundleRef
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
from benchgen.training.held_out import case_questions
from benchgen.training.package import PackageRefused, PreparationInfo, build_package


class PackageInput(LazyModel):
    """The execution's input, as the API starts it: the package to build, the preparation it is of, and the
    environment version's registered bundle (whose cases the contamination report reads)."""

    package_id: str
    preparation_id: str
    profile: str
    preparation: PreparationInfo
    bundle: BundleRef
    # What registration measured of the environment's judge: a package graded by that judge carries it.
    judge_calibration: JudgeCalibration | None = None


class BuiltPackage(LazyModel):
    """What the package record keeps of a built package; its files bounded as the record bounds them."""

    sha256: str
    size: int
    files: PackageFiles


class PackageBuild(LazyModel):
    """The task's answer, what the state machine branches on and announces: ``refused`` with its
    ``reason``, or the ``package`` recorded Ready."""

    refused: bool
    reason: str | None = None
    package: BuiltPackage | None = None


class PackageIdMismatch(BenchGenError):
    """The build computed another package id than the one the package was recorded under."""


class PackageNotBuilding(BenchGenError):
    """The package has left Building (Ready, Refused or Failed): what it says stands."""


def build_package_step(
    task: PackageInput, *, store: ObjectStorage, packages: PackagesStore, workdir: Path
) -> PackageBuild:
    """Build the package and record it Ready, or record the profile's refusal; the answer says which.

    A profile that refuses the preparation is an answer (the package is recorded Refused with the
    profile's message), not an error: it is the user's choice to change, not the platform's failure.
    A package that has left Building is never rewritten: :class:`PackageNotBuilding`.
    """
    prepared = workdir / "preparation"
    for name in (EXAMPLES_NAME, HELD_OUT_NAME):
        store.download(preparation_key(task.preparation_id, name), prepared / name)
    bundle = store.download(task.bundle.key, workdir / "bundle.zip", version_id=task.bundle.version_id)
    env = open_environment(bundle, workdir / "env")
    try:
        report = build_package(
            prepared,
            task.preparation,
            task.profile,
            workdir / "package",
            cases=case_questions(env),
            scoring_program=env.task.scoring_program,
            judge_calibration=task.judge_calibration,
        )
    except PackageRefused as refusal:
        reason = clip_text(str(refusal))
        refused = packages.transition(
            task.package_id, expected=PackageStatus.BUILDING, status=PackageStatus.REFUSED, reason=reason
        )
        if not refused:
            raise _left_building(task.package_id, f"refused ({reason})") from None
        return PackageBuild(refused=True, reason=reason)
    if report.package_id != task.package_id:
        raise PackageIdMismatch(
            f"package {task.package_id} was requested, but preparation {task.preparation_id} in its current "
            f"state with profile {task.profile} gives package {report.package_id}: request the package again"
        )
    store.upload(report.path, package_key(report.package_id), content_type="application/zip")
    built = BuiltPackage(sha256=report.sha256, size=report.size, files=report.files)
    if not packages.ready(task.package_id, sha256=built.sha256, size=built.size, files=built.files):
        raise _left_building(task.package_id, "built")
    return PackageBuild(refused=False, package=built)


def record_package_failure(package_id: str, reason: str, *, packages: PackagesStore) -> None:
    """The pipeline's caught failure: the package Building -> Failed with ``reason``."""
    failed = packages.transition(
        package_id, expected=PackageStatus.BUILDING, status=PackageStatus.FAILED, reason=reason
    )
    if not failed:
        raise _left_building(package_id, f"failed ({reason})")


def _left_building(package_id: str, outcome: str) -> PackageNotBuilding:
    return PackageNotBuilding(
        f"package {package_id} is no longer Building, so it is not recorded as {outcome}: it keeps what it "
        "was recorded with first"
    )
