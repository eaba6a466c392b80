"""State machine task: mark the live run Deploying and wait until its model answers; or record the
InferencePipeline's caught failure on the run."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction
from benchgen.aws.providers.registry import model_for
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import Failure, RunInput
from benchgen.steps.inference import deploy, record_live_run_failure

function = LambdaFunction("deploy_model")


@function.task(RunInput, correlation="run_id")
def handler(task: RunInput, wired: Adapters) -> dict[str, Any]:
    return deploy(
        task.run_id,
        runs=wired.runs,
        model_for=model_for,
        backoff=wired.model_backoff,
        deadline=function.deadline(),
    )


@function.failure(correlation="run_id")
def record_failure(failure: Failure, wired: Adapters) -> None:
    record_live_run_failure(failure.id, failure.reason, runs=wired.runs)
