"""State machine task: build the run's finetune artifact and describe the dataset to save."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.pipeline.artifact_step import build_run_artifact

function = LambdaFunction("build_artifact", counts=True)


class ArtifactTask(BaseModel):
    run_id: str


@function.task(ArtifactTask, correlation="run_id")
def handler(task: ArtifactTask, wired: Adapters) -> dict[str, Any]:
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
