"""State machine task: cut a live run's cases (or its judging pass's prompts) into its provider's batch
jobs and submit them."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import batch_for
from benchgen.aws.wiring import Adapters
from benchgen.records.runs import RunStatus
from benchgen.step_inputs import SubmitBatchInput
from benchgen.steps.batch_inference import live_work, shard_prompts, submit
from benchgen.steps.judging_batch import judge_prompts, judging_work

function = LambdaFunction("submit_batch")


@function.task(SubmitBatchInput, correlation="run_id")
def handler(task: SubmitBatchInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        if task.judging:
            work, judge = judging_work(wired.runs, wired.store, task.run_id, workdir)
            prompts = judge_prompts(wired.store, judge, task.run_id, task.shard_count)
        else:
            work = live_work(wired.runs, task.run_id, RunStatus.RUNNING)
            prompts = shard_prompts(wired.store, task.run_id, task.shard_count)
        return submit(
            work,
            prompts,
            task.shard_count,
            task.cases,
            store=wired.store,
            workdir=workdir,
            batch_for=batch_for,
            bucket=wired.settings.data_bucket,
            role_arn=wired.settings.bedrock_batch_role_arn,
            wait_seconds=wired.settings.batch_poll_seconds,
            max_records=wired.settings.batch_max_records,
        )
