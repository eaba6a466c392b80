"""State machine task (after the ShardedScoring Map): merge the shards' scores and complete the run."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from benchgen.aws.wiring import adapters
from benchgen.observability import handler_tracer
from benchgen.pipeline.shard_steps import reduce_scores
from benchgen.settings import METRICS_NAMESPACE

# The function's folder, as POWERTOOLS_SERVICE_NAME says on AWS; in-process the functions share one
# environment, so it is given here for the local cloud's logs to say which function wrote them.
SERVICE = "reduce_scores"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


class ReduceTask(BaseModel):
    run_id: str


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = ReduceTask.model_validate(event)
    logger.thread_safe_append_keys(run_id=task.run_id, correlation_id=task.run_id)
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        answer = reduce_scores(
            task.run_id,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            starter=wired.starter,
            publisher=wired.publisher,
            workdir=Path(workdir),
        )
    metrics.add_metric(name=f"Run{answer['status']}", unit=MetricUnit.Count, value=1)
    return answer
