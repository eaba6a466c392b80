"""S3 ObjectCreated under environments/: validate the bundle and record the environment version."""

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
from benchgen.pipeline.register import register_environment
from benchgen.settings import METRICS_NAMESPACE

# The function's folder, as POWERTOOLS_SERVICE_NAME says on AWS; in-process the functions share one
# environment, so it is given here for the local cloud's logs to say which function wrote them.
SERVICE = "register_environment"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


def register(upload: UploadedObject) -> dict[str, Any]:
    wired = adapters()
    with tempfile.TemporaryDirectory() as workdir:
        record = register_environment(
            upload.key,
            upload.version_id,
            store=wired.store,
            environments=wired.environments,
            workdir=Path(workdir),
            max_program_seconds=wired.settings.max_program_seconds,
            shard_cases=wired.settings.shard_cases,
        )
    metrics.add_metric(name=f"Environment{record.status.value}", unit=MetricUnit.Count, value=1)
    return {"environment_id": record.environment_id, "version": record.version, "status": record.status.value}


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return {"environments": for_each_upload(event, context, register, logger)}
