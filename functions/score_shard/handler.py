"""State machine task (inside the ShardedScoring Map): judge one shard's cases and upload its score part."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import ShardInput
from benchgen.steps.shards import score_shard

function = LambdaFunction("score_shard", counts=True)


@function.task(ShardInput, correlation="run_id", keys=("shard",))
def handler(task: ShardInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        answer = score_shard(
            task.run_id,
            task.shard,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            publisher=wired.publisher,
            workdir=workdir,
            sandbox=wired.sandbox,
        )
    function.count("ShardScored")
    return answer
