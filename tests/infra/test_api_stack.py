"""The REST API: contract routes, every one behind the Cognito authorizer, proxied to the api function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Resource = dict[str, Any]

CONTRACT_ROUTES = {
    ("POST", "/environments"),
    ("GET", "/environments"),
    ("POST", "/runs"),
    ("GET", "/runs"),
    ("GET", "/runs/{run_id}"),
    ("GET", "/runs/{run_id}/files"),
    ("GET", "/runs/{run_id}/detailed-results"),
    ("GET", "/runs/{run_id}/config"),
    ("POST", "/runs/{run_id}/dataset"),
    ("GET", "/datasets"),
    ("GET", "/datasets/{dataset_id}"),
    ("POST", "/connections"),
    ("GET", "/connections"),
    ("GET", "/connections/{connection_id}"),
    ("DELETE", "/connections/{connection_id}"),
    ("POST", "/preparations"),
    ("GET", "/preparations"),
    ("GET", "/preparations/{preparation_id}"),
    ("GET", "/preparations/{preparation_id}/examples"),
    ("GET", "/preparations/{preparation_id}/coverage"),
    ("POST", "/preparations/{preparation_id}/packages"),
    ("GET", "/preparations/{preparation_id}/packages"),
    ("GET", "/packages/{package_id}"),
    ("POST", "/training-runs"),
    ("GET", "/training-runs"),
    ("GET", "/training-runs/{training_run_id}"),
    ("POST", "/training-runs/{training_run_id}/cancel"),
    ("POST", "/training-runs/{training_run_id}/evaluation-grants"),
    ("POST", "/training-runs/{training_run_id}/evaluations"),
    ("GET", "/evaluations/{evaluation_id}"),
    ("GET", "/evaluations/{evaluation_id}/report"),
}


@pytest.fixture(scope="session")
def methods(of_type: Callable[[str], dict[str, Resource]]) -> dict[tuple[str, str], Resource]:
    """Every API Gateway method by (HTTP method, full resource path), but the console's CORS preflights."""
    api_resources = of_type("AWS::ApiGateway::Resource")

    def path_of(reference: dict[str, Any]) -> str:
        if "Fn::GetAtt" in reference:
            return ""
        node = api_resources[reference["Ref"]]["Properties"]
        return f"{path_of(node['ParentId'])}/{node['PathPart']}"

    return {
        (m["Properties"]["HttpMethod"], path_of(m["Properties"]["ResourceId"]) or "/"): m
        for m in of_type("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] != "OPTIONS"
    }


@pytest.fixture(scope="session")
def stage(of_type: Callable[[str], dict[str, Resource]]) -> Resource:
    (found,) = of_type("AWS::ApiGateway::Stage").values()
    return found


def test_the_api_serves_exactly_the_contract_routes(methods: dict[tuple[str, str], Resource]) -> None:
    assert set(methods) == CONTRACT_ROUTES


def test_every_method_requires_a_cognito_user_pool_token(
    methods: dict[tuple[str, str], Resource], of_type: Callable[[str], dict[str, Resource]]
) -> None:
    (authorizer_id,) = of_type("AWS::ApiGateway::Authorizer")
    for route, method in methods.items():
        if route[0] == "OPTIONS":
            continue
        assert method["Properties"]["AuthorizationType"] == "COGNITO_USER_POOLS", route
        assert method["Properties"]["AuthorizerId"] == {"Ref": authorizer_id}, route


def test_the_authorizer_trusts_the_stacks_user_pool(of_type: Callable[[str], dict[str, Resource]]) -> None:
    (authorizer,) = of_type("AWS::ApiGateway::Authorizer").values()
    assert authorizer["Properties"]["Type"] == "COGNITO_USER_POOLS"
    assert authorizer["Properties"]["ProviderARNs"] == [{"Fn::GetAtt": ["UserPool", "Arn"]}]


def test_every_method_proxies_to_the_api_function(methods: dict[tuple[str, str], Resource]) -> None:
    for route, method in methods.items():
        integration = method["Properties"]["Integration"]
        assert integration["Type"] == "AWS_PROXY", route
        assert {"Fn::GetAtt": ["ApiFunction", "Arn"]} in integration["Uri"]["Fn::Join"][1], route


def test_every_method_validates_its_request(
    methods: dict[tuple[str, str], Resource], of_type: Callable[[str], dict[str, Resource]]
) -> None:
    (validator_id, validator) = next(iter(of_type("AWS::ApiGateway::RequestValidator").items()))
    assert validator["Properties"]["ValidateRequestBody"] is True
    assert validator["Properties"]["ValidateRequestParameters"] is True
    assert all(m["Properties"]["RequestValidatorId"] == {"Ref": validator_id} for m in methods.values())


def test_the_stage_writes_access_logs_traces_and_throttles(stage: Resource) -> None:
    properties = stage["Properties"]
    assert properties["AccessLogSetting"]["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    assert '"status":"$context.status"' in properties["AccessLogSetting"]["Format"]
    assert properties["TracingEnabled"] is True
    (settings,) = properties["MethodSettings"]
    assert settings["ThrottlingRateLimit"] == 50
    assert settings["ThrottlingBurstLimit"] == 100
    assert settings["DataTraceEnabled"] is False


def test_only_an_administrator_creates_accounts(resources: dict[str, Resource]) -> None:
    properties = resources["UserPool"]["Properties"]
    assert properties["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": True}


def test_passwords_must_be_long_and_mixed(resources: dict[str, Resource]) -> None:
    policy = resources["UserPool"]["Properties"]["Policies"]["PasswordPolicy"]
    assert policy["MinimumLength"] >= 14
    assert policy["RequireLowercase"] and policy["RequireUppercase"]
    assert policy["RequireNumbers"] and policy["RequireSymbols"]


def test_sign_in_threats_are_blocked(resources: dict[str, Resource]) -> None:
    assert resources["UserPool"]["Properties"]["UserPoolAddOns"] == {"AdvancedSecurityMode": "ENFORCED"}


def test_the_command_line_client_has_no_secret(resources: dict[str, Resource]) -> None:
    properties = resources["UserPoolClient"]["Properties"]
    assert properties["UserPoolId"] == {"Ref": "UserPool"}
    assert properties["GenerateSecret"] is False


def test_the_stack_outputs_where_users_sign_in_call_the_api_and_upload(synthesis: Any) -> None:
    outputs = synthesis.template["Outputs"]

    assert outputs["UserPoolId"]["Value"] == {"Ref": "UserPool"}
    assert outputs["UserPoolClientId"]["Value"] == {"Ref": "UserPoolClient"}
    assert outputs["DataBucketName"]["Value"] == {"Ref": "DataBucket"}
    assert "RestApi" in str(outputs["ApiUrl"]["Value"])


def test_the_pool_has_the_evaluators_group_whose_name_the_api_function_reads(
    of_type: Callable[[str], dict[str, Resource]], functions: dict[str, Resource]
) -> None:
    (group,) = of_type("AWS::Cognito::UserPoolGroup").values()

    assert group["Properties"]["UserPoolId"] == {"Ref": "UserPool"}
    assert group["Properties"]["GroupName"] == "evaluators"
    variables = functions["api"]["Properties"]["Environment"]["Variables"]
    assert variables["EVALUATORS_GROUP"] == group["Properties"]["GroupName"]
    # only the API decides who may evaluate
    assert [name for name, f in functions.items() if "EVALUATORS_GROUP" in str(f)] == ["api"]
