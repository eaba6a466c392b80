"""State machine task: look at a live run's batch jobs once, and copy out the output a provider keeps."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import batch_for
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import PollBatchInput
from benchgen.steps.batch_inference import poll

function = LambdaFunction("poll_batch")


@function.task(PollBatchInput, correlation="run_id")
def handler(task: PollBatchInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        return poll(
            task.run_id,
            task.polls,
            runs=wired.runs,
            store=wired.store,
            workdir=workdir,
            batch_for=batch_for,
            bucket=wired.settings.data_bucket,
            max_polls=wired.settings.batch_max_polls,
            wait_seconds=wired.settings.batch_poll_seconds,
        )
