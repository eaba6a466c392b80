"""Lambda entry of the REST API: API Gateway proxy event in, the resolver's answer out."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.api import ApiServices
from benchgen.api.app import app
from benchgen.aws.wiring import adapters
from benchgen.observability import handler_tracer
from benchgen.settings import METRICS_NAMESPACE

# The function's folder, as POWERTOOLS_SERVICE_NAME says on AWS; in-process the functions share one
# environment, so it is given here for the local cloud's logs to say which function wrote them.
SERVICE = "api"
logger = Logger(service=SERVICE)
tracer = handler_tracer(SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


def _count(event_name: str) -> None:
    metrics.add_metric(name=event_name, unit=MetricUnit.Count, value=1)


def services() -> ApiServices:
    """The function's adapters (built on the cold start's first invocation), as the routes reach them."""
    wired = adapters()
    return ApiServices(
        settings=wired.settings,
        connections=wired.connections,
        environments=wired.environments,
        runs=wired.runs,
        datasets=wired.datasets,
        store=wired.store,
        publisher=wired.publisher,
        idempotency=wired.idempotency,
        packages=wired.packages,
        package_starter=wired.package_starter,
        preparations=wired.preparations,
        preparation_starter=wired.preparation_starter,
        training_runs=wired.training_runs,
        evaluations=wired.evaluations,
        evaluation_starter=wired.evaluation_starter,
        record_event=_count,
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Cleared by the resolver after every request, so it is appended on every invocation.
    app.append_context(services=services())  # type: ignore[no-untyped-call]
    answer: dict[str, Any] = app.resolve(event, context)
    return answer
