"""State machine task: send a training run's train and validation files, once none carries a held-out case."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import jobs_for
from benchgen.aws.wiring import Adapters
from benchgen.bucket_layout import package_key
from benchgen.steps.training import TrainingInput, upload_step

function = LambdaFunction("upload_training")


@function.task(TrainingInput, correlation="training_run_id")
def handler(task: TrainingInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        return upload_step(
            task,
            runs=wired.training_runs,
            connections=wired.connections,
            store=wired.store,
            bucket=wired.store.bucket,
            package_key=package_key,
            jobs_for=jobs_for,
            workdir=workdir,
        )
