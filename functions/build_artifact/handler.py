"""State machine task: build the run's finetune artifact and save its dataset; or record the pipeline's
failure on the run."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import Failure, RunInput
from benchgen.steps.artifact import build_run_artifact, record_artifact_failure

function = LambdaFunction("build_artifact", counts=True)


@function.task(RunInput, correlation="run_id")
def handler(task: RunInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        build = build_run_artifact(
            task.run_id,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            datasets=wired.datasets,
            workdir=workdir,
        )
    function.count("ArtifactEmitted" if build.emitted else "ArtifactNotEmitted")
    return build.model_dump(mode="json")


@function.failure(correlation="run_id")
def record_failure(failure: Failure, wired: Adapters) -> None:
    record_artifact_failure(failure.id, failure.reason, runs=wired.runs)
