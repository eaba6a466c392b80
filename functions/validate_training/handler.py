"""State machine task: check a training run against its connection's profile before anything is sent."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws.wiring import adapters
from benchgen.observability import handler_tracer
from benchgen.pipeline.training_step import TrainingTask, validate_step

SERVICE = "validate_training"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = TrainingTask.model_validate(event)
    logger.thread_safe_append_keys(training_run_id=task.training_run_id, correlation_id=task.training_run_id)
    wired = adapters()
    return validate_step(
        task, runs=wired.training_runs, connections=wired.connections, packages=wired.packages
    )
