"""State machine task: look at a live run's batch jobs (or its judging pass's) once, and copy out the
output a provider keeps."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import batch_for
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import PollBatchInput
from benchgen.steps.batch_inference import LOOKED_AT, live_work, poll
from benchgen.steps.judging_batch import judging_work

function = LambdaFunction("poll_batch")


@function.task(PollBatchInput, correlation="run_id")
def handler(task: PollBatchInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        if task.judging:
            work, _ = judging_work(wired.runs, wired.store, task.run_id, workdir)
        else:
            work = live_work(wired.runs, task.run_id, *LOOKED_AT)
        return poll(
            work,
            task.polls,
            store=wired.store,
            workdir=workdir,
            batch_for=batch_for,
            bucket=wired.settings.data_bucket,
            max_polls=wired.settings.batch_max_polls,
            wait_seconds=wired.settings.batch_poll_seconds,
        )
