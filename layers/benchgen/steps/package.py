"""The package pipeline's BuildPackage task: build one export package of a preparation and describe it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from benchgen.aws.items import to_attribute
from benchgen.errors import BenchGenError
from benchgen.ports.storage import ObjectStorage
from benchgen.records import PackageFiles, clip_text
from benchgen.steps.keys import package_key, preparation_key
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
from benchgen.training.package import PackageRefused, PreparationInfo, build_package

# The record's own bounds apply to what the state machine writes to it (see benchgen.records).
_FILES: TypeAdapter[dict[str, Any]] = TypeAdapter(PackageFiles)


class PackageTask(BaseModel):
    """The execution's input, as the API starts it: the package to build and the preparation it is of."""

    package_id: str
    preparation_id: str
    profile: str
    preparation: PreparationInfo


class PackageIdMismatch(BenchGenError):
    """The build computed another package id than the one the package was recorded under."""


def build_package_step(task: PackageTask, *, store: ObjectStorage, workdir: Path) -> dict[str, Any]:
    """The task's answer: ``refused`` and its ``reason``, or the ``package`` to record.

    A profile that refuses the preparation is an answer (the package is recorded Refused with the
    profile's message), not an error: it is the user's choice to change, not the platform's failure.
    The package's values are ready for the state machine to write: the size as a string (a DynamoDB
    number is sent as text) and the files map in DynamoDB's attribute-value form.
    """
    prepared = workdir / "preparation"
    for name in (EXAMPLES_NAME, HELD_OUT_NAME):
        store.download(preparation_key(task.preparation_id, name), prepared / name)
    try:
        report = build_package(prepared, task.preparation, task.profile, workdir / "package")
    except PackageRefused as refusal:
        return {"refused": True, "reason": clip_text(str(refusal)), "package": None}
    if report.package_id != task.package_id:
        raise PackageIdMismatch(
            f"package {task.package_id} was requested, but preparation {task.preparation_id} in its current "
            f"state with profile {task.profile} gives package {report.package_id}: request the package again"
        )
    store.upload(report.path, package_key(report.package_id), content_type="application/zip")
    files = _FILES.dump_python(_FILES.validate_python(report.files), mode="json")
    return {
        "refused": False,
        "reason": None,
        "package": {"sha256": report.sha256, "size": str(report.size), "files": to_attribute(files)["M"]},
    }
