"""State machine tasks on a training run's provider job: start it, poll it, time it out, record a failure.

One function for the four: each calls the same provider with the same grants, and a separate role per
action would repeat them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from benchgen.aws.handlers import LambdaFunction
from benchgen.aws.providers.registry import jobs_for
from benchgen.aws.wiring import Adapters
from benchgen.lazy_model import LazyModel
from benchgen.steps.training import (
    JobContext,
    TrainingInput,
    Uploaded,
    fail_step,
    poll_step,
    start_step,
    time_out_step,
)

function = LambdaFunction("training_job", counts=True)


class JobInput(TrainingInput):
    action: Literal["start", "poll", "time_out", "fail"]
    uploaded: Uploaded | None = None
    polls: int = Field(default=0, ge=0)
    poll_seconds: int = Field(default=0, ge=0)
    error: dict[str, Any] = Field(default_factory=dict)


class _NeedsUpload(LazyModel):
    uploaded: Uploaded


@function.task(JobInput, correlation="training_run_id")
def handler(task: JobInput, wired: Adapters) -> dict[str, Any]:
    runs = wired.training_runs
    if task.action == "fail":
        answer = fail_step(task, task.error, runs=runs)
    else:
        # What the event said, so that a missing field is reported as the event's own.
        uploaded = _NeedsUpload.model_validate(task.model_dump(exclude_unset=True)).uploaded
        on = JobContext(
            runs=runs, connections=wired.connections, jobs_for=jobs_for, bucket=wired.store.bucket
        )
        if task.action == "start":
            answer = start_step(task, uploaded, on=on)
        elif task.action == "poll":
            answer = poll_step(task, uploaded, task.polls, on=on)
        else:
            answer = time_out_step(task, uploaded, task.polls, task.poll_seconds, on=on)
    if answer["event"]:
        function.count(answer["event"])
    return answer
