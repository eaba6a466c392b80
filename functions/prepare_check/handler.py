"""State machine task: write a preparation's coverage and check that no held-out case reached training."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws.wiring import adapters
from benchgen.observability import handler_tracer
from benchgen.pipeline.prepare_step import CheckTask, check_preparation

# The function's folder, as POWERTOOLS_SERVICE_NAME says on AWS; in-process the functions share one
# environment, so it is given here for the local cloud's logs to say which function wrote them.
SERVICE = "prepare_check"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = CheckTask.model_validate(event)
    logger.thread_safe_append_keys(preparation_id=task.preparation_id, correlation_id=task.preparation_id)
    with tempfile.TemporaryDirectory() as workdir:
        answer = check_preparation(task, store=adapters().store, workdir=Path(workdir))
    logger.info("preparation checked", extra=answer)
    return answer
