"""State machine task: write a run's judgments from its shards' and record the judge's calls on the run."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import ShardCountInput
from benchgen.steps.judging import assemble

function = LambdaFunction("assemble_judgments")


@function.task(ShardCountInput, correlation="run_id")
def handler(task: ShardCountInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        return assemble(task.run_id, task.shard_count, runs=wired.runs, store=wired.store, workdir=workdir)
