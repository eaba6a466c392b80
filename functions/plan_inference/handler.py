"""State machine task: cut a live run's cases into shards and write the items list the inference Map reads."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import RunInput
from benchgen.steps.inference import plan

function = LambdaFunction("plan_inference")


@function.task(RunInput, correlation="run_id")
def handler(task: RunInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        return plan(
            task.run_id,
            runs=wired.runs,
            environments=wired.environments,
            store=wired.store,
            workdir=workdir,
            shard_size=wired.settings.inference_shard_size,
        )
