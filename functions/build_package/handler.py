"""State machine task: build one export package of a preparation and record it; or record the pipeline's
failure on the package."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import Failure
from benchgen.steps.package import PackageInput, build_package_step, record_package_failure

function = LambdaFunction("build_package", counts=True)


@function.task(PackageInput, correlation="preparation_id", keys=("package_id",))
def handler(task: PackageInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        build = build_package_step(task, store=wired.store, packages=wired.packages, workdir=workdir)
    function.count("PackageRefused" if build.refused else "PackageBuilt")
    return build.model_dump(mode="json")


@function.failure(correlation="package_id")
def record_failure(failure: Failure, wired: Adapters) -> None:
    record_package_failure(failure.id, failure.reason, packages=wired.packages)
