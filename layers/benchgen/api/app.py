"""The API's resolver: validation on, one router per resource, one place that maps errors."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from benchgen.api import datasets, environments, runs
from benchgen.api.errors import register_error_handlers

app = APIGatewayRestResolver(enable_validation=True)
register_error_handlers(app)
app.include_router(environments.router)
app.include_router(runs.router)
app.include_router(datasets.router)
