"""The CDK grants read each provider kind's IAM needs: a kind registered the documented way (the
throwaway kind of ``tests/throwaway``) gets its statements in the roles of the functions that call models
and follow training jobs, with its role service in the PassRole condition and its reasons acknowledged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from infra.synth import Synthesis
from tests.throwaway import registered

Resource = dict[str, Any]
MODEL_CALLS = "throwaway:InvokeModel"
JOB_CALLS = {"throwaway:StartJob", "throwaway:ReadJob"}


@pytest.fixture(scope="module")
def synthesis() -> Synthesis:
    from infra.synth import synthesize

    with registered():
        return synthesize()


def _role_policies(resources: dict[str, Resource], function: Resource) -> list[Resource]:
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        policy
        for policy in resources.values()
        if policy["Type"] == "AWS::IAM::Policy" and {"Ref": role} in policy["Properties"]["Roles"]
    ]


def _actions(policies: list[Resource]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for policy in policies:
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            for action in [actions] if isinstance(actions, str) else actions:
                found.setdefault(action, []).append(statement)
    return found


@pytest.mark.slow
def test_a_registered_kinds_iam_needs_are_granted_to_the_functions_that_have_them(
    synthesis: Synthesis,
    functions_of: Callable[[dict[str, Resource]], dict[str, Resource]],
    render: Callable[[Any], str],
) -> None:
    resources = synthesis.template["Resources"]
    functions = functions_of(resources)
    granted = {name: _actions(_role_policies(resources, function)) for name, function in functions.items()}

    # The functions that call models may invoke its models, on its resource pattern, and nothing else may
    callers = {name for name, actions in granted.items() if MODEL_CALLS in actions}
    assert callers == {
        "deploy_model",
        "infer_shard",
        "compare_evaluation",
        "plan_judging",
        "judge_shard",
    }
    (statement,) = granted["infer_shard"][MODEL_CALLS]
    assert render(statement["Resource"]) == "arn:${AWS::Partition}:throwaway:*:${AWS::AccountId}:model/*"

    # The function that follows training jobs may start and read its jobs, and pass the role to it
    trainers = {name for name, actions in granted.items() if JOB_CALLS & set(actions)}
    assert trainers == {"training_job"}
    (passing,) = granted["training_job"]["iam:PassRole"]
    assert passing["Condition"]["StringEquals"]["iam:PassedToService"] == [
        "bedrock.amazonaws.com",
        "sagemaker.amazonaws.com",
        "throwaway.amazonaws.com",
    ]


@pytest.mark.slow
def test_a_registered_kinds_wildcards_are_acknowledged_with_its_reasons(
    synthesis: Synthesis, functions_of: Callable[[dict[str, Resource]], dict[str, Resource]]
) -> None:
    # Given the stack synthesized with the kind registered / Then cdk-nag reports nothing unacknowledged
    assert synthesis.findings == []
    resources = synthesis.template["Resources"]
    (policy,) = _role_policies(resources, functions_of(resources)["training_job"])
    reasons = {rule["id"]: rule["reason"] for rule in policy["Metadata"]["cdk_nag"]["rules_to_suppress"]}
    jobs = "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:throwaway:*:<AWS::AccountId>:job/benchgen-*]"
    assert (
        reasons[jobs]
        == "The jobs are named by BenchGen; the grant stays on this account's jobs of that name."
    )
