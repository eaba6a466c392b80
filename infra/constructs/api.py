"""The REST API: API Gateway proxying every route to the api function, behind the Cognito user pool."""

from __future__ import annotations

import json

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.constructs import set_logical_id

# What an OpenAPI path item may hold besides its operations (summary, parameters, servers...) is no route.
_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


def api_routes() -> dict[str, tuple[str, ...]]:
    """Resource path -> HTTP methods, read from the resolver's OpenAPI document: API Gateway serves exactly
    the routes the api function answers, and any other is its 403 before the function is invoked."""
    from benchgen.api.openapi import render  # the resolver imports every router: only for an Api

    paths: dict[str, dict[str, object]] = json.loads(render())["paths"]
    return {
        path: tuple(method.upper() for method in item if method in _HTTP_METHODS)
        for path, item in paths.items()
    }


THROTTLING_RATE_LIMIT = 50
THROTTLING_BURST_LIMIT = 100


class Api(Construct):
    """The REST API, its access logs and its authorizer on ``user_pool`` (which lives with the data)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, handler: lambda_.IFunction, user_pool: cognito.IUserPool
    ) -> None:
        super().__init__(scope, construct_id)

        authorizer = apigw.CognitoUserPoolsAuthorizer(self, "Authorizer", cognito_user_pools=[user_pool])

        access_logs = logs.LogGroup(
            self, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        set_logical_id(access_logs, "ApiAccessLogGroup")
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name="benchgen",
            description="BenchGen: environments, runs and datasets",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.DESTROY,
            deploy_options=apigw.StageOptions(
                stage_name="v1",
                tracing_enabled=True,
                throttling_rate_limit=THROTTLING_RATE_LIMIT,
                throttling_burst_limit=THROTTLING_BURST_LIMIT,
                logging_level=apigw.MethodLoggingLevel.ERROR,
                # Request and response bodies carry presigned URLs: keep them out of the execution logs.
                data_trace_enabled=False,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
            ),
            default_method_options=apigw.MethodOptions(
                authorizer=authorizer,
                authorization_type=apigw.AuthorizationType.COGNITO,
            ),
        )
        set_logical_id(self.rest_api, "RestApi")
        validator = self.rest_api.add_request_validator(
            "Validator", validate_request_body=True, validate_request_parameters=True
        )
        integration = apigw.LambdaIntegration(handler, proxy=True, allow_test_invoke=False)
        for path, methods in api_routes().items():
            resource = self.rest_api.root.resource_for_path(path)
            for method in methods:
                resource.add_method(method, integration, request_validator=validator)
