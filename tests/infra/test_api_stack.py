"""The REST API: contract routes, every one behind the Cognito authorizer, proxied to the api function."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.api import api_routes

Resource = dict[str, Any]

# The API's published contract; tests/unit/test_openapi_in_sync.py holds it equal to the resolver's routes.
OPENAPI_DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


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


def test_api_gateway_serves_exactly_the_methods_of_the_openapi_documents_paths(
    methods: dict[tuple[str, str], Resource],
) -> None:
    paths = json.loads(OPENAPI_DOCUMENT.read_text(encoding="utf-8"))["paths"]
    documented = {(method.upper(), path) for path, item in paths.items() for method in item}

    assert len(documented) == 33
    assert set(methods) == documented


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


def test_a_route_added_to_the_resolver_is_served_by_api_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    # given the resolver's document with a new route, and a path item that also lists shared parameters
    document = {
        "paths": {
            "/runs": {"get": {}, "post": {}},
            "/runs/{run_id}/labels": {"parameters": [{"name": "run_id", "in": "path"}], "put": {}},
        }
    }
    monkeypatch.setattr("benchgen.api.openapi.render", lambda: json.dumps(document))

    # then API Gateway's routes are the document's operations, nothing else
    assert api_routes() == {"/runs": ("GET", "POST"), "/runs/{run_id}/labels": ("PUT",)}
