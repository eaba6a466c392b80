"""State machine task (inside the Map): ask the live model every case of one shard."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from benchgen.aws.inference import model_for
from benchgen.aws.wiring import adapters
from benchgen.inference.steps import infer_shard
from benchgen.observability import handler_tracer
from benchgen.settings import METRICS_NAMESPACE

SERVICE = "infer_shard"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


class ShardTask(BaseModel):
    run_id: str
    shard: int


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = ShardTask.model_validate(event)
    logger.thread_safe_append_keys(run_id=task.run_id, correlation_id=task.run_id, shard=task.shard)
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        answer = infer_shard(
            task.run_id,
            task.shard,
            runs=wired.runs,
            store=wired.store,
            workdir=Path(workdir),
            model_for=model_for,
            backoff=wired.model_backoff,
        )
    metrics.add_metric(name="CasesUnanswered", unit=MetricUnit.Count, value=answer["unanswered"])
    logger.info("shard answered", extra=answer)
    return answer
