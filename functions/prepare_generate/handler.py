"""State machine task: generate a preparation's examples and held-out cases from its judged runs."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws.wiring import adapters
from benchgen.observability import handler_tracer
from benchgen.pipeline.prepare_step import GenerateTask, generate_preparation
from benchgen.settings import METRICS_NAMESPACE

# The function's folder, as POWERTOOLS_SERVICE_NAME says on AWS; in-process the functions share one
# environment, so it is given here for the local cloud's logs to say which function wrote them.
SERVICE = "prepare_generate"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = GenerateTask.model_validate(event)
    # Per thread: in-process, concurrent invocations share the logger.
    logger.thread_safe_append_keys(preparation_id=task.preparation_id, correlation_id=task.preparation_id)
    with tempfile.TemporaryDirectory() as workdir:
        answer = generate_preparation(task, store=adapters().store, workdir=Path(workdir))
    refused = "refused" in answer
    if refused:
        logger.info("preparation refused", extra={"reason": answer["refused"]})
    metrics.add_metric(
        name="PreparationRefused" if refused else "PreparationGenerated", unit=MetricUnit.Count, value=1
    )
    return answer
