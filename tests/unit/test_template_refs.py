"""Reference resolution in a synthesized template: Ref, GetAtt, Join, Sub and pseudo parameters."""

from __future__ import annotations

from typing import Any

import pytest

from localcloud.stack_template import (
    Route,
    StackTemplate,
    UnresolvedReferenceError,
    lazy_handler,
    service_name,
)

TABLE_ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/runs-local"


def _template(resources: dict[str, Any] | None = None) -> StackTemplate:
    body = {
        "Resources": {
            "RunsTable": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
            "ScoreFunction": {"Type": "AWS::Lambda::Function", "Properties": {}},
            "AccessLogs": {"Type": "AWS::S3::Bucket", "Properties": {}},
            **(resources or {}),
        }
    }
    template = StackTemplate(body, region="eu-west-1")
    template.record("RunsTable", "runs-local", Arn=TABLE_ARN, StreamArn=TABLE_ARN + "/stream/local")
    template.record(
        "ScoreFunction", "score-local", Arn="arn:aws:lambda:eu-west-1:123456789012:function:score"
    )
    return template


def test_ref_gives_the_physical_name_recorded_for_the_logical_id() -> None:
    assert _template().resolve({"Ref": "RunsTable"}) == "runs-local"


def test_get_att_in_list_and_dotted_forms_gives_the_recorded_attribute() -> None:
    template = _template()
    assert template.resolve({"Fn::GetAtt": ["RunsTable", "Arn"]}) == TABLE_ARN
    assert template.resolve({"Fn::GetAtt": "RunsTable.StreamArn"}) == TABLE_ARN + "/stream/local"


def test_pseudo_parameters_are_the_local_account_and_region() -> None:
    template = _template()
    resolved = template.resolve(
        [
            {"Ref": "AWS::Partition"},
            {"Ref": "AWS::Region"},
            {"Ref": "AWS::AccountId"},
            {"Ref": "AWS::URLSuffix"},
        ]
    )
    assert resolved == ["aws", "eu-west-1", "123456789012", "amazonaws.com"]


def test_join_of_strings_refs_and_get_atts_builds_one_string() -> None:
    # given a state machine definition fragment as CDK synthesizes it
    fragment = {
        "Fn::Join": [
            "",
            [
                '{"Resource":"',
                {"Fn::GetAtt": ["ScoreFunction", "Arn"]},
                '","Table":"arn:',
                {"Ref": "AWS::Partition"},
                ":dynamodb:::table/",
                {"Ref": "RunsTable"},
                '"}',
            ],
        ]
    }
    # when it is resolved
    resolved = _template().resolve(fragment)
    # then every reference is replaced in place
    assert resolved == (
        '{"Resource":"arn:aws:lambda:eu-west-1:123456789012:function:score",'
        '"Table":"arn:aws:dynamodb:::table/runs-local"}'
    )


def test_sub_replaces_refs_attributes_variables_and_keeps_escaped_literals() -> None:
    template = _template()
    resolved = template.resolve(
        {
            "Fn::Sub": [
                "${RunsTable}|${RunsTable.Arn}|${AWS::Region}|${Stage}|${!Literal}",
                {"Stage": {"Ref": "ScoreFunction"}},
            ]
        }
    )
    assert resolved == f"runs-local|{TABLE_ARN}|eu-west-1|score-local|${{Literal}}"


def test_nested_properties_are_resolved_and_plain_values_kept() -> None:
    variables = {"RUNS_TABLE": {"Ref": "RunsTable"}, "POWERTOOLS_SERVICE_NAME": "score", "LIMIT": 5}
    assert _template().resolve({"Variables": variables}) == {
        "Variables": {"RUNS_TABLE": "runs-local", "POWERTOOLS_SERVICE_NAME": "score", "LIMIT": 5}
    }


def test_ref_to_an_unknown_logical_id_is_refused_with_that_id() -> None:
    with pytest.raises(UnresolvedReferenceError, match="'NoSuchThing'") as raised:
        _template().resolve({"Fn::Join": ["", [{"Ref": "NoSuchThing"}]]})
    assert raised.value.logical_id == "NoSuchThing"
    assert "no such resource" in str(raised.value)


def test_ref_to_a_resource_the_cloud_did_not_create_names_its_type() -> None:
    with pytest.raises(UnresolvedReferenceError, match=r"'AccessLogs'.*AWS::S3::Bucket"):
        _template().resolve({"Ref": "AccessLogs"})


def test_get_att_of_an_unknown_attribute_is_refused() -> None:
    with pytest.raises(UnresolvedReferenceError, match=r"'RunsTable'.*'LatestStreamLabel'"):
        _template().resolve({"Fn::GetAtt": ["RunsTable", "LatestStreamLabel"]})


def test_unsupported_intrinsic_function_is_refused_rather_than_passed_through() -> None:
    with pytest.raises(UnresolvedReferenceError, match="Fn::If"):
        _template().resolve({"Fn::If": ["IsProd", "a", "b"]})


def _api_resources() -> dict[str, Any]:
    def resource(path_part: str, parent: Any) -> dict[str, Any]:
        return {
            "Type": "AWS::ApiGateway::Resource",
            "Properties": {"PathPart": path_part, "ParentId": parent},
        }

    def method(
        verb: str, resource_id: str, integration: str = "AWS_PROXY", auth: str = "COGNITO_USER_POOLS"
    ) -> dict[str, Any]:
        return {
            "Type": "AWS::ApiGateway::Method",
            "Properties": {
                "HttpMethod": verb,
                "ResourceId": {"Ref": resource_id},
                "AuthorizationType": auth,
                "Integration": {"Type": integration},
            },
        }

    return {
        "Runs": resource("runs", {"Fn::GetAtt": ["Api", "RootResourceId"]}),
        "RunsRunId": resource("{run_id}", {"Ref": "Runs"}),
        "RunsRunIdFiles": resource("files", {"Ref": "RunsRunId"}),
        "RunsGet": method("GET", "Runs"),
        "RunsPost": method("POST", "Runs"),
        "RunGet": method("GET", "RunsRunId"),
        "FilesGet": method("GET", "RunsRunIdFiles", auth="NONE"),
        "RunsOptions": method("OPTIONS", "Runs", integration="MOCK", auth="NONE"),
    }


def test_api_routes_are_the_full_resource_paths_of_proxy_methods() -> None:
    routes = _template(_api_resources()).api_routes()
    assert routes == [
        Route("/runs", "GET", authorized=True),
        Route("/runs", "POST", authorized=True),
        Route("/runs/{run_id}", "GET", authorized=True),
        Route("/runs/{run_id}/files", "GET", authorized=False),
    ]


def test_function_folder_comes_from_its_powertools_service_name() -> None:
    function = {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": "build_artifact"}}}}
    assert service_name(function) == "build_artifact"
    assert service_name({"Properties": {"Handler": "index.handler"}}) is None


def test_unknown_function_folder_is_refused_before_any_import() -> None:
    with pytest.raises(ValueError, match="'billing'"):
        lazy_handler("billing")
