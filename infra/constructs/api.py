"""The REST API: API Gateway proxying every route to the api function, behind a Cognito user pool."""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from benchgen.settings import EVALUATORS_GROUP
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
    def __init__(self, scope: Construct, construct_id: str, *, handler: lambda_.IFunction) -> None:
        super().__init__(scope, construct_id)

        self.user_pool = cognito.UserPool(
            self,
            "UserPool",
            # Accounts are created by an administrator: benchmark authors and model owners are invited.
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True, username=True),
            password_policy=cognito.PasswordPolicy(
                min_length=14,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            mfa=cognito.Mfa.OPTIONAL,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.PLUS,
            standard_threat_protection_mode=cognito.StandardThreatProtectionMode.FULL_FUNCTION,
            removal_policy=RemovalPolicy.RETAIN,
        )
        set_logical_id(self.user_pool, "UserPool")
        self.user_pool_client = self.user_pool.add_client(
            "CommandLineClient",
            auth_flows=cognito.AuthFlow(user_srp=True, user_password=True),
            generate_secret=False,
            prevent_user_existence_errors=True,
        )
        set_logical_id(self.user_pool_client, "UserPoolClient")
        # Evaluating a trained model is its own permission: an administrator adds users to this group.
        self.evaluators_group = cognito.CfnUserPoolGroup(
            self,
            "EvaluatorsGroup",
            user_pool_id=self.user_pool.user_pool_id,
            group_name=EVALUATORS_GROUP,
            description="Members may evaluate the models they trained on their packages' held-out cases",
        )
        self.evaluators_group.override_logical_id("EvaluatorsGroup")
        authorizer = apigw.CognitoUserPoolsAuthorizer(self, "Authorizer", cognito_user_pools=[self.user_pool])

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
