"""S3 ObjectCreated under predictions/: score the run and start its artifact state machine."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws.s3_events import UploadedObject
from benchgen.aws.wiring import adapters, for_each_upload
from benchgen.observability import handler_tracer
from benchgen.pipeline.attempts import Invocation
from benchgen.pipeline.score_step import score_run
from benchgen.settings import METRICS_NAMESPACE

# The function's folder, as POWERTOOLS_SERVICE_NAME says on AWS; in-process the functions share one
# environment, so it is given here for the local cloud's logs to say which function wrote them.
SERVICE = "score"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


def score(upload: UploadedObject, invocation: Invocation) -> dict[str, Any]:
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        run = score_run(
            upload.key,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            starter=wired.starter,
            publisher=wired.publisher,
            workdir=Path(workdir),
            sandbox=wired.sandbox,
            invocation=invocation,
            sharded_starter=wired.sharded_starter,
        )
    if run is None:
        return {"key": upload.key, "ignored": True}
    metrics.add_metric(name=f"Run{run.status.value}", unit=MetricUnit.Count, value=1)
    return {"run_id": run.run_id, "status": run.status.value}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    invocation = Invocation.of(context, attempts=adapters().settings.step_attempts)
    return {"runs": for_each_upload(event, context, score, logger, invocation=invocation)}
