"""State machine tasks on a training run's provider job: start it, poll it, time it out, record a failure.

One function for the four: each calls the same provider with the same grants, and a separate role per
action would repeat them.
"""

from __future__ import annotations

from typing import Any, Literal

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from benchgen.aws.training_jobs import jobs_for
from benchgen.aws.wiring import adapters
from benchgen.observability import handler_tracer
from benchgen.pipeline.training_step import (
    JobContext,
    TrainingTask,
    Uploaded,
    fail_step,
    poll_step,
    start_step,
    time_out_step,
)
from benchgen.settings import METRICS_NAMESPACE

SERVICE = "training_job"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


class JobTask(TrainingTask):
    action: Literal["start", "poll", "time_out", "fail"]
    uploaded: Uploaded | None = None
    polls: int = Field(default=0, ge=0)
    poll_seconds: int = Field(default=0, ge=0)
    error: dict[str, Any] = Field(default_factory=dict)


class _NeedsUpload(BaseModel):
    uploaded: Uploaded


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = JobTask.model_validate(event)
    logger.thread_safe_append_keys(training_run_id=task.training_run_id, correlation_id=task.training_run_id)
    wired = adapters()
    runs = wired.training_runs
    if task.action == "fail":
        answer = fail_step(task, task.error, runs=runs)
    else:
        uploaded = _NeedsUpload.model_validate(event).uploaded
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
        metrics.add_metric(name=answer["event"], unit=MetricUnit.Count, value=1)
    return answer
