"""State machine task: create or reuse an evaluation's two live runs and start them."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from benchgen.aws.wiring import adapters
from benchgen.evaluation.steps import start
from benchgen.observability import handler_tracer
from benchgen.settings import METRICS_NAMESPACE

SERVICE = "start_evaluation"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


class EvaluationTask(BaseModel):
    evaluation_id: str


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = EvaluationTask.model_validate(event)
    logger.thread_safe_append_keys(evaluation_id=task.evaluation_id, correlation_id=task.evaluation_id)
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        answer = start(
            task.evaluation_id,
            evaluations=wired.evaluations,
            runs=wired.runs,
            store=wired.store,
            inference=wired.inference_starter,
            workdir=Path(workdir),
        )
    metrics.add_metric(name="EvaluationStarted", unit=MetricUnit.Count, value=1)
    logger.info("evaluation runs started", extra=answer)
    return answer
