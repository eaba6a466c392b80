"""S3 ObjectCreated under submissions/: turn the submission into the run's prediction output."""

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
from benchgen.pipeline.ingest_step import ingest_submission
from benchgen.records import RunStatus
from benchgen.settings import METRICS_NAMESPACE

# The function's folder, as POWERTOOLS_SERVICE_NAME says on AWS; in-process the functions share one
# environment, so it is given here for the local cloud's logs to say which function wrote them.
SERVICE = "ingest"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


def ingest(upload: UploadedObject, invocation: Invocation) -> dict[str, Any]:
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        run = ingest_submission(
            upload.key,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            workdir=Path(workdir),
            sandbox=wired.sandbox,
            invocation=invocation,
        )
    if run is None:
        return {"key": upload.key, "ignored": True}
    # A refused submission ends the run here: it counts with the score step's failures, as RunFailed.
    outcome = "RunFailed" if run.status is RunStatus.FAILED else "SubmissionIngested"
    metrics.add_metric(name=outcome, unit=MetricUnit.Count, value=1)
    return {"run_id": run.run_id, "status": run.status.value}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    invocation = Invocation.of(context, attempts=adapters().settings.step_attempts)
    return {"runs": for_each_upload(event, context, ingest, logger, invocation=invocation)}
