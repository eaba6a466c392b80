"""State machine task: build one export package of a preparation."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.steps.package import PackageTask, build_package_step

function = LambdaFunction("build_package", counts=True)


@function.task(PackageTask, correlation="preparation_id", keys=("package_id",))
def handler(task: PackageTask, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        answer = build_package_step(task, store=wired.store, workdir=workdir)
    function.count("PackageRefused" if answer["refused"] else "PackageBuilt")
    return answer
