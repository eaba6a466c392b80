"""The application's stacks: each well under CloudFormation's 500 resources, the data kept and protected,
and every import exported by a stack deployed before the one that imports it."""

from __future__ import annotations

from typing import Any

import pytest

from infra.stacks import API_STACK, DATA_STACK, MONITORING_STACK, PIPELINES_STACK

Template = dict[str, Any]
# CloudFormation's quota is 500 resources a stack; this leaves each stack room for what comes next.
MAX_RESOURCES = 300
# What outlives every deployment: the data stack holds these and nothing else.
DURABLE_TYPES = {
    "AWS::S3::Bucket",
    "AWS::S3::BucketPolicy",
    "AWS::DynamoDB::Table",
    "AWS::Events::EventBus",
    "AWS::Cognito::UserPool",
    "AWS::Cognito::UserPoolClient",
    "AWS::Cognito::UserPoolGroup",
}
# The ones that hold data, and so must survive the stack's deletion.
HOLDERS = {"AWS::S3::Bucket", "AWS::DynamoDB::Table", "AWS::Cognito::UserPool"}


def _of_type(template: Template, kinds: set[str]) -> dict[str, Any]:
    return {lid: r for lid, r in template["Resources"].items() if r["Type"] in kinds}


def test_the_app_deploys_four_stacks_data_first_and_monitoring_last(
    stack_templates: dict[str, Template],
) -> None:
    assert list(stack_templates) == [DATA_STACK, PIPELINES_STACK, API_STACK, MONITORING_STACK]


def test_no_stack_holds_more_than_300_resources(stack_templates: dict[str, Template]) -> None:
    counts = {name: len(template["Resources"]) for name, template in stack_templates.items()}
    over = {name: count for name, count in counts.items() if count > MAX_RESOURCES}
    assert over == {}, f"resources per stack: {counts}"


def test_the_data_stack_holds_only_what_outlives_every_deployment(
    stack_templates: dict[str, Template],
) -> None:
    kinds = {resource["Type"] for resource in stack_templates[DATA_STACK]["Resources"].values()}
    assert kinds == DURABLE_TYPES


def test_every_bucket_table_and_user_pool_of_the_data_stack_is_kept_when_the_stack_is_deleted(
    stack_templates: dict[str, Template],
) -> None:
    holders = _of_type(stack_templates[DATA_STACK], HOLDERS)
    deleted = {
        lid: r.get("DeletionPolicy") for lid, r in holders.items() if r.get("DeletionPolicy") != "Retain"
    }
    assert deleted == {}
    # the data bucket, its log bucket, nine tables and the user pool
    assert len(holders) == 12


def test_the_tables_and_the_user_pool_refuse_deletion(stack_templates: dict[str, Template]) -> None:
    data = stack_templates[DATA_STACK]
    tables = _of_type(data, {"AWS::DynamoDB::Table"})
    unprotected = [
        lid
        for lid, table in tables.items()
        if table["Properties"].get("DeletionProtectionEnabled") is not True
    ]
    assert unprotected == []
    assert data["Resources"]["UserPool"]["Properties"]["DeletionProtection"] == "ACTIVE"


def _imports(value: Any) -> set[str]:
    """The export names `value` imports, wherever they sit in it."""
    if isinstance(value, list):
        return {name for item in value for name in _imports(item)}
    if not isinstance(value, dict):
        return set()
    if set(value) == {"Fn::ImportValue"}:
        return {value["Fn::ImportValue"]}
    return {name for item in value.values() for name in _imports(item)}


def _exports(template: Template) -> set[str]:
    return {output["Export"]["Name"] for output in template.get("Outputs", {}).values() if "Export" in output}


def test_each_stack_imports_only_what_a_stack_deployed_before_it_exports(
    stack_templates: dict[str, Template],
) -> None:
    # Given the stacks in deployment order / Then no import waits on a later stack (no dependency cycle)
    exported_before: set[str] = set()
    unmet: dict[str, set[str]] = {}
    for name, template in stack_templates.items():
        missing = _imports(template["Resources"]) - exported_before
        if missing:
            unmet[name] = missing
        exported_before |= _exports(template)
    assert unmet == {}
    # and the API stack reads the data stack's bucket, tables and user pool through those imports
    assert {"BenchGenData-DataBucketArn", "BenchGenData-UserPoolArn"} <= _imports(
        stack_templates[API_STACK]["Resources"]
    )


def test_the_uploads_are_subscribed_by_the_stack_of_the_functions_they_trigger(
    stack_templates: dict[str, Template],
) -> None:
    owners = {
        name
        for name, template in stack_templates.items()
        for resource in template["Resources"].values()
        if resource["Type"] == "Custom::S3BucketNotifications"
    }
    assert owners == {PIPELINES_STACK}


@pytest.mark.slow
def test_the_data_stack_is_protected_from_termination() -> None:
    from infra.synth import synthesize

    protected: dict[str, bool] = {}

    def record(stacks: Any) -> None:
        protected.update({stack.stack_name: stack.termination_protection for stack in stacks.in_order})

    synthesize(customize=record)
    assert protected == {DATA_STACK: True, PIPELINES_STACK: False, API_STACK: False, MONITORING_STACK: False}
