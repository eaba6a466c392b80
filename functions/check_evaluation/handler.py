"""State machine task: are both of an evaluation's runs finished?"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from benchgen.aws.wiring import adapters
from benchgen.evaluation.steps import check
from benchgen.observability import handler_tracer

SERVICE = "check_evaluation"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)


class CheckTask(BaseModel):
    evaluation_id: str
    polls: int = Field(ge=0)
    max_checks: int = Field(ge=1)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = CheckTask.model_validate(event)
    logger.thread_safe_append_keys(evaluation_id=task.evaluation_id, correlation_id=task.evaluation_id)
    wired = adapters()
    return check(
        task.evaluation_id, task.polls, task.max_checks, evaluations=wired.evaluations, runs=wired.runs
    )
