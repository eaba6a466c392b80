"""State machine task: send a training run's train and validation files, once none carries a held-out case."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws.training_jobs import jobs_for
from benchgen.aws.wiring import adapters
from benchgen.observability import handler_tracer
from benchgen.pipeline.keys import package_key
from benchgen.pipeline.training_step import TrainingTask, upload_step

SERVICE = "upload_training"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = TrainingTask.model_validate(event)
    logger.thread_safe_append_keys(training_run_id=task.training_run_id, correlation_id=task.training_run_id)
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        return upload_step(
            task,
            runs=wired.training_runs,
            connections=wired.connections,
            store=wired.store,
            package_key=package_key,
            jobs_for=jobs_for,
            workdir=Path(workdir),
        )
