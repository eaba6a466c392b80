"""State machine task (inside a judging Map): ask the judge about every answer of one shard, of a run's
judging pass or of a version's judge calibration."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import model_for
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import JudgeShardInput
from benchgen.steps.calibration import calibration_job
from benchgen.steps.judging import judge_shard, run_job

function = LambdaFunction("judge_shard", counts=True)


@function.task(JudgeShardInput, correlation="run_id", keys=("calibration", "shard"))
def handler(task: JudgeShardInput, wired: Adapters) -> dict[str, Any]:
    if task.calibration is not None:
        key = calibration_job(task.calibration, environments=wired.environments)
    else:
        assert task.run_id is not None  # the input holds one of the two
        key = run_job(task.run_id, runs=wired.runs)
    with scratch() as workdir:
        answer = judge_shard(
            key,
            task.shard,
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
