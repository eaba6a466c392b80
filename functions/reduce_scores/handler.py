"""State machine task (after the ShardedScoring Map): merge the shards' scores and complete the run."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.pipeline.shard_steps import reduce_scores

function = LambdaFunction("reduce_scores", counts=True)


class ReduceTask(BaseModel):
    run_id: str


@function.task(ReduceTask, correlation="run_id")
def handler(task: ReduceTask, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        answer = reduce_scores(
            task.run_id,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            starter=wired.starter,
            publisher=wired.publisher,
            workdir=workdir,
        )
    function.count(f"Run{answer['status']}")
    return answer
