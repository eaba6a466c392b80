"""Lambda entry of the REST API: API Gateway proxy event in, the resolver's answer out."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.api.app import app
from benchgen.aws.handlers import LambdaFunction
from benchgen.aws.wiring import adapters
from benchgen.requests.services import ApiServices

function = LambdaFunction("api", counts=True, correlation_id_path=correlation_paths.API_GATEWAY_REST)


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
        training_starter=wired.training_starter,
        evaluations=wired.evaluations,
        evaluation_starter=wired.evaluation_starter,
        inference_starter=wired.live_run_starter,
        record_event=function.count,
    )


@function.entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Cleared by the resolver after every request, so it is appended on every invocation.
    app.append_context(services=services())  # type: ignore[no-untyped-call]
    answer: dict[str, Any] = app.resolve(event, context)
    return answer
