"""State machine task: cut a live run's cases into its provider's batch jobs and submit them."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import batch_for
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import SubmitBatchInput
from benchgen.steps.batch_inference import submit

function = LambdaFunction("submit_batch")


@function.task(SubmitBatchInput, correlation="run_id")
def handler(task: SubmitBatchInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        return submit(
            task.run_id,
            task.shard_count,
            task.cases,
            runs=wired.runs,
            store=wired.store,
            workdir=workdir,
            batch_for=batch_for,
            bucket=wired.settings.data_bucket,
            role_arn=wired.settings.bedrock_batch_role_arn,
            wait_seconds=wired.settings.batch_poll_seconds,
            max_records=wired.settings.batch_max_records,
        )
