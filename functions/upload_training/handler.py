"""State machine task: send a training run's train and validation files, once none carries a held-out case."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.training_jobs import jobs_for
from benchgen.aws.wiring import Adapters
from benchgen.pipeline.training_step import TrainingTask, upload_step
from benchgen.steps.keys import package_key

function = LambdaFunction("upload_training")


@function.task(TrainingTask, correlation="training_run_id")
def handler(task: TrainingTask, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        return upload_step(
            task,
            runs=wired.training_runs,
            connections=wired.connections,
            store=wired.store,
            package_key=package_key,
            jobs_for=jobs_for,
            workdir=workdir,
        )
