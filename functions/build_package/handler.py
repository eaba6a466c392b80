"""State machine task: build one export package of a preparation."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws.wiring import adapters
from benchgen.observability import handler_tracer
from benchgen.pipeline.package_step import PackageTask, build_package_step
from benchgen.settings import METRICS_NAMESPACE

# The function's folder, as POWERTOOLS_SERVICE_NAME says on AWS; in-process the functions share one
# environment, so it is given here for the local cloud's logs to say which function wrote them. The
# namespace too: a module imported before the environment is set would otherwise count under none.
SERVICE = "build_package"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    task = PackageTask.model_validate(event)
    # Per thread: in-process, concurrent invocations share the logger.
    logger.thread_safe_append_keys(package_id=task.package_id, correlation_id=task.preparation_id)
    with tempfile.TemporaryDirectory() as workdir:
        answer = build_package_step(task, store=adapters().store, workdir=Path(workdir))
    metrics.add_metric(
        name="PackageRefused" if answer["refused"] else "PackageBuilt", unit=MetricUnit.Count, value=1
    )
    return answer
