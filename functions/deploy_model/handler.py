"""State machine task: mark the live run Deploying and wait until its model answers."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction
from benchgen.aws.providers.registry import model_for
from benchgen.aws.wiring import Adapters
from benchgen.steps.inference import deploy
from benchgen.tasks import RunTask

function = LambdaFunction("deploy_model")


@function.task(RunTask, correlation="run_id")
def handler(task: RunTask, wired: Adapters) -> dict[str, Any]:
    return deploy(task.run_id, runs=wired.runs, model_for=model_for, backoff=wired.model_backoff)
