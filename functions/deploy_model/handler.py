"""State machine task: mark the live run Deploying and wait until its model answers."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from benchgen.aws.inference import model_for
from benchgen.aws.wiring import adapters
from benchgen.inference.steps import deploy
from benchgen.observability import handler_tracer

SERVICE = "deploy_model"
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
    return deploy(task.run_id, runs=wired.runs, model_for=model_for, backoff=wired.model_backoff)
