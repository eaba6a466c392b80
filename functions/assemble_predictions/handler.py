"""State machine task: write a live run's inference log and its generated submission."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from benchgen.aws.wiring import adapters
from benchgen.inference.steps import assemble
from benchgen.observability import handler_tracer

SERVICE = "assemble_predictions"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)


class AssembleTask(BaseModel):
    run_id: str
    shard_count: int


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = AssembleTask.model_validate(event)
    logger.thread_safe_append_keys(run_id=task.run_id, correlation_id=task.run_id)
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        return assemble(
            task.run_id, task.shard_count, runs=wired.runs, store=wired.store, workdir=Path(workdir)
        )
