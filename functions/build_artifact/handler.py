"""State machine task: build the run's finetune artifact and describe the dataset to save."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.steps.artifact import build_run_artifact
from benchgen.tasks import RunTask

function = LambdaFunction("build_artifact", counts=True)


@function.task(RunTask, correlation="run_id")
def handler(task: RunTask, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        answer = build_run_artifact(
            task.run_id,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            workdir=workdir,
        )
    function.count("ArtifactEmitted" if answer["emitted"] else "ArtifactNotEmitted")
    return answer
