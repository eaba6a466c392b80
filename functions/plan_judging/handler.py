"""State machine task: find a run's judge and cut its cases and answers into the shards the judging Map
reads; or record the JudgingPipeline's caught failure on the run."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import model_for
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import Failure, RunInput
from benchgen.steps.judging import plan, record_judging_failure

function = LambdaFunction("plan_judging")


@function.task(RunInput, correlation="run_id")
def handler(task: RunInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        return plan(
            task.run_id,
            runs=wired.runs,
            environments=wired.environments,
            connections=wired.connections,
            store=wired.store,
            workdir=workdir,
            model_for=model_for,
            backoff=wired.model_backoff,
            shard_size=wired.settings.inference_shard_size,
            deadline=function.deadline(),
        )


@function.failure(correlation="run_id")
def record_failure(failure: Failure, wired: Adapters) -> None:
    record_judging_failure(failure.id, failure.reason, runs=wired.runs)
