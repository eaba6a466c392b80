"""What AWS refuses at deploy time, refused on hand-made templates, each rule just broken and just kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcloud.deploy_checks import DeployRefusedError, Refusal, check_deployable, deploy_refusals

STACK = "AppStack"


def _queue(visibility: int | None = None) -> dict[str, Any]:
    props = {} if visibility is None else {"VisibilityTimeout": visibility}
    return {"Type": "AWS::SQS::Queue", "Properties": props}


def _function(**props: Any) -> dict[str, Any]:
    return {"Type": "AWS::Lambda::Function", "Properties": {"Handler": "handler.handler", **props}}


def _body(resources: dict[str, Any], **sections: Any) -> dict[str, Any]:
    return {"Resources": resources, **sections}


def _messages(body: dict[str, Any]) -> list[str]:
    return [refusal.message for refusal in deploy_refusals({STACK: body})]


def _chars(document: dict[str, Any]) -> int:
    return len(json.dumps(document, separators=(",", ":")))


def _policy(chars: int) -> dict[str, Any]:
    """A policy document of ``chars`` characters, without whitespace (IAM does not count it)."""

    def document(resource: str) -> dict[str, Any]:
        statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": resource}
        return {"Version": "2012-10-17", "Statement": [statement]}

    return document("r" * (chars - _chars(document(""))))


# the error


def test_a_refused_deployment_names_the_stack_the_logical_id_and_aws_words() -> None:
    # given a queue whose consumer may run longer than the queue hides a message
    body = _body(
        {
            "Jobs": _queue(),
            "Worker": _function(Timeout=60),
            "WorkerJobs": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "EventSourceArn": {"Fn::GetAtt": ["Jobs", "Arn"]},
                    "FunctionName": {"Ref": "Worker"},
                },
            },
        }
    )

    # when it is checked for deployment
    with pytest.raises(DeployRefusedError) as refused:
        check_deployable({STACK: body})

    # then the error says where, in Lambda's words
    assert refused.value.refusals == [
        Refusal(
            STACK,
            "WorkerJobs",
            "Queue visibility timeout: 30 seconds is less than Function timeout: 60 seconds",
        )
    ]
    assert str(refused.value) == (
        "AWS would refuse this deployment:\n"
        "  AppStack WorkerJobs: Queue visibility timeout: 30 seconds is less than Function timeout: "
        "60 seconds"
    )


def test_every_stack_is_checked_and_every_refusal_listed() -> None:
    # given two stacks that each break a rule
    stacks = {"DataStack": _body({"Bad_Id": _queue()}), "AppStack": _body({"Other-Id": _queue()})}

    # when they are checked, then both are named
    assert [(refusal.stack, refusal.logical_id) for refusal in deploy_refusals(stacks)] == [
        ("DataStack", "Bad_Id"),
        ("AppStack", "Other-Id"),
    ]


# CloudFormation


def test_more_than_500_resources_are_refused_and_500_deploy() -> None:
    resources = {f"Queue{index}": _queue() for index in range(501)}
    assert _messages(_body(resources)) == [
        "Template format error: Number of resources, 501, is greater than maximum allowed, 500"
    ]
    del resources["Queue500"]
    assert _messages(_body(resources)) == []


def _sized_body(size: int) -> dict[str, Any]:
    """A one-queue template of exactly ``size`` bytes as the CDK writes it (JSON indented by one space)."""
    body = _body({"Queue": _queue()}, Description="")
    padding = size - len(json.dumps(body, indent=1).encode())
    return {**body, "Description": "d" * padding}


def test_a_template_over_1_mib_is_refused_and_one_of_1_mib_deploys() -> None:
    assert _messages(_sized_body(1_048_577)) == ["Template may not exceed 1048576 bytes in size."]
    assert _messages(_sized_body(1_048_576)) == []


@pytest.mark.parametrize(
    ("section", "wording"),
    [("Outputs", "Outputs count"), ("Parameters", "Parameter count"), ("Mappings", "Mappings count")],
)
def test_more_than_200_outputs_parameters_or_mappings_are_refused_and_200_deploy(
    section: str, wording: str
) -> None:
    entries = {f"Entry{index}": {"Value": "v"} for index in range(201)}
    refused = _body({"Queue": _queue()}, **{section: entries})
    assert deploy_refusals({STACK: refused}) == [
        Refusal(STACK, section, f"Template format error: {wording} 201 is greater than max allowed 200")
    ]
    del entries["Entry200"]
    assert _messages(_body({"Queue": _queue()}, **{section: entries})) == []


def test_a_logical_id_that_is_not_alphanumeric_is_refused() -> None:
    assert _messages(_body({"Jobs_Queue": _queue()})) == [
        "Template format error: Resource name Jobs_Queue is non alphanumeric."
    ]


def test_a_logical_id_over_255_characters_is_refused_and_one_of_255_deploys() -> None:
    long_id = "Q" * 256
    assert deploy_refusals({STACK: _body({long_id: _queue()})}) == [
        Refusal(
            STACK, long_id, f"Template format error: Resource name {long_id} is longer than 255 characters."
        )
    ]
    assert _messages(_body({"Q" * 255: _queue()})) == []


# Lambda and SQS


def _consumer(
    visibility: int | None, timeout: int | None, function_reference: dict[str, Any]
) -> dict[str, Any]:
    function = _function() if timeout is None else _function(Timeout=timeout)
    return _body(
        {
            "Jobs": _queue(visibility),
            "Worker": function,
            "WorkerJobs": {
                "Type": "AWS::Lambda::EventSourceMapping",
                "Properties": {
                    "EventSourceArn": {"Fn::GetAtt": ["Jobs", "Arn"]},
                    "FunctionName": function_reference,
                },
            },
        }
    )


def test_a_queue_hiding_messages_for_less_than_its_consumers_timeout_is_refused() -> None:
    body = _consumer(120, 121, {"Fn::GetAtt": ["Worker", "Arn"]})
    assert _messages(body) == [
        "Queue visibility timeout: 120 seconds is less than Function timeout: 121 seconds"
    ]


def test_a_queue_hiding_messages_as_long_as_its_consumers_timeout_deploys() -> None:
    assert _messages(_consumer(60, 60, {"Ref": "Worker"})) == []


def test_the_default_visibility_timeout_covers_the_default_function_timeout() -> None:
    # 30 s against 3 s
    assert _messages(_consumer(None, None, {"Ref": "Worker"})) == []


def _environment(variables: dict[str, Any], **resources: Any) -> dict[str, Any]:
    return _body({"Worker": _function(Environment={"Variables": variables}), **resources})


def test_environment_variables_over_4_kb_are_refused_with_the_string_measured() -> None:
    # {"A":"..."} is 8 characters around the value
    (message,) = _messages(_environment({"A": "v" * 4089}))
    assert message == (
        "Lambda was unable to configure your environment variables because the environment variables "
        'you have provided exceeded the 4KB limit. String measured: {"A":"' + "v" * 4089 + '"}'
    )
    assert _messages(_environment({"A": "v" * 4088})) == []


def test_a_reference_in_the_environment_counts_as_the_name_cloudformation_generates() -> None:
    body = _environment({"TABLE": {"Ref": "Runs"}, "PAD": "v" * 4060}, Runs={"Type": "AWS::DynamoDB::Table"})
    (message,) = _messages(body)
    assert message.endswith(
        'String measured: {"TABLE":"AppStack-Runs-XXXXXXXXXXXX","PAD":"' + "v" * 4060 + '"}'
    )


def test_a_value_another_stack_exports_counts_as_what_that_stack_resolves_it_to() -> None:
    # Given a data stack exporting its table's name, and a function of another stack importing it
    data = _body(
        {"Runs": {"Type": "AWS::DynamoDB::Table"}},
        Outputs={"RunsTableName": {"Value": {"Ref": "Runs"}, "Export": {"Name": "Data-RunsTableName"}}},
    )
    code = _environment({"TABLE": {"Fn::ImportValue": "Data-RunsTableName"}, "PAD": "v" * 4070})

    # When both stacks are checked
    refusals = deploy_refusals({"Data": data, "Code": code})

    # Then the import is measured as the name the data stack's table gets
    (refusal,) = refusals
    assert (refusal.stack, refusal.logical_id) == ("Code", "Worker")
    assert refusal.message.endswith(
        'String measured: {"TABLE":"Data-Runs-XXXXXXXXXXXX","PAD":"' + "v" * 4070 + '"}'
    )


def test_an_import_of_an_export_no_stack_makes_is_refused_naming_it() -> None:
    code = _environment({"TABLE": {"Fn::ImportValue": "Data-Missing"}})
    with pytest.raises(LookupError, match="Data-Missing"):
        deploy_refusals({"Code": code})


def test_a_function_name_over_64_characters_is_refused_and_one_of_64_deploys() -> None:
    name = "f" * 65
    assert _messages(_body({"Worker": _function(FunctionName=name)})) == [
        f"1 validation error detected: Value '{name}' at 'functionName' failed to satisfy constraint: "
        "Member must have length less than or equal to 64"
    ]
    assert _messages(_body({"Worker": _function(FunctionName="f" * 64)})) == []


@pytest.mark.parametrize(
    ("size", "constraint"), [(511, "greater than or equal to 512"), (10_241, "less than or equal to 10240")]
)
def test_ephemeral_storage_outside_512_to_10240_mb_is_refused(size: int, constraint: str) -> None:
    assert _messages(_body({"Worker": _function(EphemeralStorage={"Size": size})})) == [
        f"1 validation error detected: Value '{size}' at 'ephemeralStorage.size' failed to satisfy "
        f"constraint: Member must have value {constraint}"
    ]


@pytest.mark.parametrize("size", [512, 10_240])
def test_ephemeral_storage_at_its_bounds_deploys(size: int) -> None:
    assert _messages(_body({"Worker": _function(EphemeralStorage={"Size": size})})) == []


def test_reserving_concurrency_below_100_unreserved_is_refused_across_stacks() -> None:
    # given 1,000 concurrent executions in the account, 450 reserved in one stack and 451 in another
    stacks = {
        "DataStack": _body({"Loader": _function(ReservedConcurrentExecutions=450)}),
        "AppStack": _body({"Scorer": _function(ReservedConcurrentExecutions=451)}),
    }

    # then the function that leaves 99 unreserved is refused
    assert deploy_refusals(stacks) == [
        Refusal(
            "AppStack",
            "Scorer",
            "Specified ReservedConcurrentExecutions for function decreases account's "
            "UnreservedConcurrentExecution below its minimum value of [100].",
        )
    ]
    # and 900 reserved in all deploys
    stacks["AppStack"] = _body({"Scorer": _function(ReservedConcurrentExecutions=450)})
    assert deploy_refusals(stacks) == []


# IAM


def _role_with_policies(*documents: dict[str, Any]) -> dict[str, Any]:
    resources: dict[str, Any] = {"WorkerRole": {"Type": "AWS::IAM::Role", "Properties": {}}}
    for index, document in enumerate(documents):
        resources[f"WorkerPolicy{index}"] = {
            "Type": "AWS::IAM::Policy",
            "Properties": {"PolicyDocument": document, "Roles": [{"Ref": "WorkerRole"}]},
        }
    return _body(resources)


def test_a_roles_inline_policies_over_10240_characters_together_are_refused() -> None:
    # given two policies of 5,120 and 5,121 characters on one role
    first, second = _policy(5120), _policy(5121)
    assert (_chars(first), _chars(second)) == (5120, 5121)

    # then IAM's quota on the role's inline policies is passed
    assert deploy_refusals({STACK: _role_with_policies(first, second)}) == [
        Refusal(
            STACK,
            "WorkerRole",
            "Maximum policy size of 10240 bytes exceeded for role AppStack-WorkerRole-XXXXXXXXXXXX",
        )
    ]


def test_a_roles_inline_policies_of_10240_characters_together_deploy_whitespace_not_counted() -> None:
    assert _messages(_role_with_policies(_policy(5120), _policy(5120))) == []


def test_inline_policies_written_in_the_role_count_towards_its_quota() -> None:
    body = _role_with_policies(_policy(5120))
    body["Resources"]["WorkerRole"]["Properties"]["Policies"] = [
        {"PolicyName": "own", "PolicyDocument": _policy(5121)}
    ]
    assert [refusal.logical_id for refusal in deploy_refusals({STACK: body})] == ["WorkerRole"]


def _managed_policy(document: dict[str, Any]) -> dict[str, Any]:
    return {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": document}}


def test_a_managed_policy_over_6144_characters_is_refused_and_one_of_6144_deploys() -> None:
    assert deploy_refusals({STACK: _body({"Shared": _managed_policy(_policy(6145))})}) == [
        Refusal(STACK, "Shared", "Cannot exceed quota for PolicySize: 6144")
    ]
    assert _messages(_body({"Shared": _managed_policy(_policy(6144))})) == []


def _role_with_managed(arns: int, resources: int) -> dict[str, Any]:
    role = {"ManagedPolicyArns": [f"arn:aws:iam::aws:policy/P{index}" for index in range(arns)]}
    body = _body({"WorkerRole": {"Type": "AWS::IAM::Role", "Properties": role}})
    for index in range(resources):
        policy = _managed_policy(_policy(10))
        policy["Properties"]["Roles"] = [{"Ref": "WorkerRole"}]
        body["Resources"][f"Managed{index}"] = policy
    return body


def test_more_than_10_managed_policies_on_a_role_are_refused_and_10_deploy() -> None:
    # 8 named on the role and 3 that attach themselves to it
    assert deploy_refusals({STACK: _role_with_managed(8, 3)}) == [
        Refusal(STACK, "WorkerRole", "Cannot exceed quota for PoliciesPerRole: 10")
    ]
    assert _messages(_role_with_managed(8, 2)) == []


# Step Functions and S3


def _state_machine(definition_bytes: int) -> dict[str, Any]:
    definition = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "", "End": True}}})
    padded = definition.replace(
        '"Result": ""', '"Result": "' + "r" * (definition_bytes - len(definition)) + '"'
    )
    assert len(padded) == definition_bytes
    return _body(
        {"Flow": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"DefinitionString": padded}}}
    )


def _definition_refusals(definition_bytes: int) -> list[Refusal]:
    # A definition that size makes its template too large as well: only the state machine's refusal matters.
    refusals = deploy_refusals({STACK: _state_machine(definition_bytes)})
    return [refusal for refusal in refusals if refusal.logical_id == "Flow"]


def test_a_state_machine_definition_over_1_mib_is_refused_and_one_of_1_mib_deploys() -> None:
    assert _definition_refusals(1_048_577) == [
        Refusal(
            STACK,
            "Flow",
            "1 validation error detected: Value at 'definition' failed to satisfy constraint: "
            "Member must have length less than or equal to 1048576",
        )
    ]
    assert _definition_refusals(1_048_576) == []


def _bucket(name: str) -> dict[str, Any]:
    return _body({"Data": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": name}}})


@pytest.mark.parametrize(
    "name",
    ["MyBucket", "my_bucket", "ab", "b" * 64, "a..b", "192.168.1.1", "xn--data", "data-", "data-s3alias"],
)
def test_a_bucket_name_s3_does_not_allow_is_refused(name: str) -> None:
    assert _messages(_bucket(name)) == ["The specified bucket is not valid."]


@pytest.mark.parametrize("name", ["abc", "b" * 63, "benchgen-data.logs-2026"])
def test_a_bucket_name_within_s3s_rules_deploys(name: str) -> None:
    assert _messages(_bucket(name)) == []
