"""State machine task (inside the judging Map): ask the run's judge about every case of one shard."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import model_for
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import InferShardInput
from benchgen.steps.judging import judge_shard

function = LambdaFunction("judge_shard", counts=True)


@function.task(InferShardInput, correlation="run_id", keys=("shard",))
def handler(task: InferShardInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        answer = judge_shard(
            task.run_id,
            task.shard,
            runs=wired.runs,
            store=wired.store,
            workdir=workdir,
            model_for=model_for,
            backoff=wired.model_backoff,
            in_flight=task.in_flight,
            shards_at_once=task.shards_at_once,
            deadline=function.deadline(),
        )
    function.count("CasesUnjudged", answer["unjudged"])
    function.logger.info("shard judged", extra=answer)
    return answer
