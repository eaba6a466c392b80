"""State machine task: check a training run against its connection's profile before anything is sent."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction
from benchgen.aws.wiring import Adapters
from benchgen.steps.training import TrainingInput, validate_step

function = LambdaFunction("validate_training")


@function.task(TrainingInput, correlation="training_run_id")
def handler(task: TrainingInput, wired: Adapters) -> dict[str, Any]:
    return validate_step(
        task, runs=wired.training_runs, connections=wired.connections, packages=wired.packages
    )
