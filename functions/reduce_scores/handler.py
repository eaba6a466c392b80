"""State machine task (after the ShardedScoring Map): merge the shards' scores and complete the run; or
record the state machine's caught failure on the run."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import Failure, RunInput
from benchgen.steps.shards import record_sharded_failure, reduce_scores

function = LambdaFunction("reduce_scores", counts=True)


@function.task(RunInput, correlation="run_id")
def handler(task: RunInput, wired: Adapters) -> dict[str, Any]:
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


@function.failure(correlation="run_id")
def record_failure(failure: Failure, wired: Adapters) -> None:
    record_sharded_failure(failure.id, failure.reason, runs=wired.runs)
