"""State machine task: cut a live run's cases into shards for the inference Map."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from benchgen.aws.wiring import adapters
from benchgen.inference.steps import plan
from benchgen.observability import handler_tracer

SERVICE = "plan_inference"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)


class RunTask(BaseModel):
    run_id: str


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = RunTask.model_validate(event)
    logger.thread_safe_append_keys(run_id=task.run_id, correlation_id=task.run_id)
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        return plan(
            task.run_id,
            runs=wired.runs,
            environments=wired.environments,
            store=wired.store,
            workdir=Path(workdir),
            shard_size=wired.settings.inference_shard_size,
        )
