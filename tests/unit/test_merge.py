"""Merging the application's stacks into one template: imports resolved, collisions refused."""

from __future__ import annotations

from typing import Any

import pytest

from infra.merge import MergeError, merge_stacks

BOOTSTRAP = {"BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/cdk/version"}}


def _data_stack() -> dict[str, Any]:
    return {
        "Parameters": BOOTSTRAP,
        "Resources": {"RunsTable": {"Type": "AWS::DynamoDB::Table", "Properties": {}}},
        "Outputs": {
            "RunsTableArn": {
                "Value": {"Fn::GetAtt": ["RunsTable", "Arn"]},
                "Export": {"Name": "Data-RunsTableArn"},
            }
        },
    }


def _functions_stack(imported: str) -> dict[str, Any]:
    return {
        "Parameters": BOOTSTRAP,
        "Resources": {
            "ScorePolicy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "Resource": {"Fn::Join": ["", [{"Fn::ImportValue": imported}, "/index/by_status"]]}
                },
            }
        },
    }


def test_an_import_becomes_the_exporting_stacks_expression() -> None:
    # Given a stack that imports the table ARN another stack exports
    stacks = {"Data": _data_stack(), "Functions": _functions_stack("Data-RunsTableArn")}

    # When they are merged
    merged = merge_stacks(stacks)

    # Then the import reads the table's ARN by its logical id, and both stacks' resources are there
    policy = merged["Resources"]["ScorePolicy"]["Properties"]
    arn = {"Fn::GetAtt": ["RunsTable", "Arn"]}
    assert policy["Resource"] == {"Fn::Join": ["", [arn, "/index/by_status"]]}
    assert sorted(merged["Resources"]) == ["RunsTable", "ScorePolicy"]
    # and the parameter both stacks declare alike is kept once
    assert merged["Parameters"] == BOOTSTRAP


def test_an_import_of_an_export_no_stack_declares_is_refused_by_name() -> None:
    stacks = {"Data": _data_stack(), "Functions": _functions_stack("Data-RunsTableName")}

    with pytest.raises(MergeError, match="Functions imports 'Data-RunsTableName', which no stack"):
        merge_stacks(stacks)


def test_one_logical_id_in_two_stacks_is_refused_naming_both() -> None:
    # Given two stacks that each declare a resource RunsTable
    other = {"Resources": {"RunsTable": {"Type": "AWS::DynamoDB::Table", "Properties": {}}}}

    with pytest.raises(MergeError, match="'RunsTable' is declared by both Data and Other"):
        merge_stacks({"Data": _data_stack(), "Other": other})


def test_a_parameter_two_stacks_declare_differently_is_refused() -> None:
    other = {"Parameters": {"BootstrapVersion": {"Type": "String"}}}

    with pytest.raises(MergeError, match="'BootstrapVersion' is declared by both Data and Other"):
        merge_stacks({"Data": _data_stack(), "Other": other})


def test_one_export_name_in_two_stacks_is_refused() -> None:
    with pytest.raises(MergeError, match="export 'Data-RunsTableArn' is declared by both Data and Again"):
        merge_stacks({"Data": _data_stack(), "Again": {"Outputs": _data_stack()["Outputs"]}})
