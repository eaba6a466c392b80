"""State machine task (inside the ShardedScoring Map): collect one shard's finetune examples, upload them."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import ShardInput
from benchgen.steps.shards import build_shard_artifact

function = LambdaFunction("build_shard_artifact", counts=True)


@function.task(ShardInput, correlation="run_id", keys=("shard",))
def handler(task: ShardInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        answer = build_shard_artifact(
            task.run_id,
            task.shard,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            publisher=wired.publisher,
            workdir=workdir,
        )
    function.count("ShardArtifactCollected")
    return answer
