"""Each function's and each state machine's role, with its policies, from the synthesized template.

A function's ``Role`` (a state machine's ``RoleArn``) names an AWS::IAM::Role; its permissions are the
role's inline ``Policies``, every AWS::IAM::Policy and AWS::IAM::ManagedPolicy whose ``Roles`` include
it, and its ``ManagedPolicyArns``. Policies are resolved against what the local cloud created, so they
name the same ARNs the calls are made on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from localcloud.stack_template import ACCOUNT_ID, StackTemplate, UnresolvedReferenceError, service_name

Policy = dict[str, Any]

# The AWS managed policies a role of the stack may attach, with their documented statements. A role that
# attaches another one is refused: write it down here first.
AWS_MANAGED_POLICIES: dict[str, Policy] = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ],
    },
}

# Where a policy names a resource the local cloud does not create (a log group, a CloudFront
# distribution), no call made here can be on it: the statement stays, on an ARN that nothing matches.
NOT_CREATED_LOCALLY = "arn:aws:cloudformation:{region}:{account}:stack/not-created-locally/{logical_id}"


@dataclass(frozen=True)
class Role:
    """A role as its callers assume it: ``session`` is the name on its assumed-role ARN (Lambda uses the
    function's name)."""

    name: str
    session: str
    policies: tuple[tuple[str, Policy], ...]

    @property
    def principal(self) -> str:
        return f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/{self.name}/{self.session}"


@dataclass(frozen=True)
class Roles:
    """The role of each function (by folder) and of each state machine (by ARN)."""

    functions: Mapping[str, Role]
    state_machines: Mapping[str, Role]


def template_roles(template: StackTemplate) -> Roles:
    functions: dict[str, Role] = {}
    for lid, resource in template.of_type("AWS::Lambda::Function").items():
        folder = service_name(resource)
        if folder is None or lid not in template.physical:
            continue
        role = _role(template, template.properties(lid)["Role"], session=template.physical[lid].ref)
        known = functions.get(folder)
        if known is not None and known.policies != role.policies:
            raise ValueError(
                f"functions of folder {folder!r} run under roles with different policies ({known.name}, "
                f"{role.name}): the local cloud tells its callers apart by folder"
            )
        functions.setdefault(folder, role)
    state_machines = {
        template.physical[lid].ref: _role(
            template,
            template.properties(lid)["RoleArn"],
            session=template.physical[lid].attributes["Name"],
        )
        for lid in template.of_type("AWS::StepFunctions::StateMachine")
        if lid in template.physical
    }
    return Roles(functions, state_machines)


def _role(template: StackTemplate, reference: Any, *, session: str) -> Role:
    arn = template.resolve_str(reference)
    found = [
        lid
        for lid in template.of_type("AWS::IAM::Role")
        if lid in template.physical and template.physical[lid].attributes.get("Arn") == arn
    ]
    if len(found) != 1:
        raise UnresolvedReferenceError(arn, "no AWS::IAM::Role of the template has this ARN")
    (lid,) = found
    name = template.physical[lid].ref
    props = template.properties(lid)
    policies: list[tuple[str, Policy]] = [
        (str(inline["PolicyName"]), _resolved(template, inline["PolicyDocument"]))
        for inline in props.get("Policies", [])
    ]
    for policy_type in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for policy_lid in template.of_type(policy_type):
            policy_props = template.properties(policy_lid)
            # By name, not by logical id: a policy may name its role by a reference or, in a template
            # merged from several stacks, by the value imported from another stack.
            if name in template.resolve(policy_props.get("Roles", [])):
                policies.append((policy_lid, _resolved(template, policy_props["PolicyDocument"])))
    for managed in props.get("ManagedPolicyArns", []):
        managed_arn = template.resolve_str(managed)
        if managed_arn not in AWS_MANAGED_POLICIES:
            raise LookupError(
                f"role {lid} attaches {managed_arn}, whose statements the local cloud does not know: "
                f"add them to AWS_MANAGED_POLICIES in {__name__}"
            )
        policies.append((managed_arn.rsplit("/", 1)[-1], AWS_MANAGED_POLICIES[managed_arn]))
    return Role(name=name, session=session, policies=tuple(policies))


def _resolved(template: StackTemplate, document: Policy) -> Policy:
    statements = document.get("Statement", [])
    resolved = []
    for statement in statements if isinstance(statements, list) else [statements]:
        copy = dict(statement)
        for key in ("Resource", "NotResource"):
            if key in copy:
                items = copy[key] if isinstance(copy[key], list) else [copy[key]]
                copy[key] = [_resource(template, item) for item in items]
        resolved.append(template.resolve(copy))
    return {**document, "Statement": resolved}


def _resource(template: StackTemplate, item: Any) -> str:
    try:
        return template.resolve_str(item)
    except UnresolvedReferenceError as missing:
        return NOT_CREATED_LOCALLY.format(
            region=template.region, account=ACCOUNT_ID, logical_id=missing.logical_id
        )
