"""What CloudFormation and the services refuse at deploy time, refused before the local cloud creates it.

moto takes templates and API calls that AWS refuses (too many resources, a queue that hides a message for
less time than its consumer may run, a role whose inline policies outgrow IAM's quota), so a design could
pass every local test and fail its first ``cdk deploy``. ``check_deployable`` runs the rules below over
every stack to deploy and raises ``DeployRefusedError``, naming the stack, the logical id and AWS's own
words, when any rule is broken. It checks only what moto lets through (docs/operating.md, Limits).

Sizes that depend on physical names (environment variables, policy documents, state machine definitions)
are measured with every reference replaced by a name of the shape CloudFormation generates
(``<stack>-<logical id>-<12 characters>``, at most 64), since the real names exist only once deployed.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from localcloud.stack_template import ACCOUNT_ID, PARTITION, StackTemplate, UnresolvedReferenceError

# CloudFormation (docs: "Understand CloudFormation quotas").
MAX_RESOURCES = 500
MAX_OUTPUTS = 200
MAX_PARAMETERS = 200
MAX_MAPPINGS = 200
MAX_LOGICAL_ID = 255
# The largest template CloudFormation reads from S3, where the CDK CLI uploads every template.
MAX_TEMPLATE_BYTES = 1_048_576
# Lambda.
DEFAULT_FUNCTION_TIMEOUT_S = 3
MAX_FUNCTION_NAME = 64
MAX_ENVIRONMENT_BYTES = 4096
MIN_EPHEMERAL_MB = 512
MAX_EPHEMERAL_MB = 10_240
# The account's concurrent executions (the default quota) and what Lambda keeps unreserved of it.
ACCOUNT_CONCURRENCY = 1000
MIN_UNRESERVED_CONCURRENCY = 100
# SQS.
DEFAULT_VISIBILITY_TIMEOUT_S = 30
# IAM counts a policy's characters without its whitespace.
MAX_ROLE_INLINE_POLICY_CHARS = 10_240
MAX_MANAGED_POLICY_CHARS = 6144
MAX_MANAGED_POLICIES_PER_ROLE = 10
# Step Functions.
MAX_DEFINITION_BYTES = 1_048_576

TEMPLATE = "Template"
_ALPHANUMERIC = re.compile(r"[A-Za-z0-9]+")
_WHITESPACE = re.compile(r"\s+")
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IP_ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+")
_GENERATED_SUFFIX = "X" * 12
_GENERATED_NAME_LIMIT = 64
# Resources whose Ref is their ARN, and services whose ARNs end in "<kind>:<name>" (templates split them).
_REF_IS_ARN = frozenset(
    {
        "AWS::StepFunctions::StateMachine",
        "AWS::SNS::Topic",
        "AWS::SecretsManager::Secret",
        "AWS::IAM::ManagedPolicy",
        "AWS::Lambda::LayerVersion",
    }
)
_COLON_ARNS = frozenset({"states", "lambda"})
# Where an ARN's service is not the resource type's namespace.
_ARN_SERVICES = {"stepfunctions": "states", "cognito": "cognito-idp"}


@dataclass(frozen=True)
class Refusal:
    """One rule a stack breaks: where, and what AWS answers."""

    stack: str
    logical_id: str
    message: str

    def __str__(self) -> str:
        return f"{self.stack} {self.logical_id}: {self.message}"


class DeployRefusedError(Exception):
    """AWS would refuse to deploy these stacks; ``refusals`` says where and why."""

    def __init__(self, refusals: list[Refusal]) -> None:
        self.refusals = refusals
        lines = "\n".join(f"  {refusal}" for refusal in refusals)
        super().__init__(f"AWS would refuse this deployment:\n{lines}")


def check_deployable(stacks: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise DeployRefusedError when CloudFormation or a service would refuse any of ``stacks`` (stack name
    -> template body), listing every broken rule."""
    refusals = deploy_refusals(stacks)
    if refusals:
        raise DeployRefusedError(refusals)


def deploy_refusals(stacks: Mapping[str, Mapping[str, Any]]) -> list[Refusal]:
    """Every rule of CloudFormation's and the services' that ``stacks`` break, in stack order."""
    refusals: list[Refusal] = []
    exports = _Exports(stacks)
    for stack, body in stacks.items():
        template = _DeployedNames(stack, body, exports)
        refusals.extend(refusal for check in STACK_CHECKS for refusal in check(stack, template))
    refusals.extend(_reserved_concurrency(stacks))
    return refusals


class _Exports:
    """The value each stack's exports will have, resolved in the stack that makes it, by export name."""

    def __init__(self, stacks: Mapping[str, Mapping[str, Any]]) -> None:
        self._stacks = stacks
        self._made_by = {
            str(output["Export"]["Name"]): (stack, output["Value"])
            for stack, body in stacks.items()
            for output in body.get("Outputs", {}).values()
            if isinstance(output.get("Export", {}).get("Name"), str)
        }

    def value(self, export: str) -> str:
        if export not in self._made_by:
            raise UnresolvedReferenceError(export, "no stack of the application exports it")
        stack, value = self._made_by[export]
        return _DeployedNames(stack, self._stacks[stack], self).resolve_str(value)


class _DeployedNames(StackTemplate):
    """The template with each reference resolved to a name or ARN of the length AWS would give it."""

    def __init__(self, stack: str, body: Mapping[str, Any], exports: _Exports) -> None:
        super().__init__(dict(body))
        self.stack = stack
        self._exports = exports

    def _import_value(self, export: str) -> str:
        return self._exports.value(export)

    def _ref(self, name: str) -> str:
        pseudo = self.pseudo_parameters()
        if name in pseudo:
            return pseudo[name]
        parameter = self.body.get("Parameters", {}).get(name)
        if parameter is not None:
            return str(parameter.get("Default", ""))
        if name not in self.resources:
            raise UnresolvedReferenceError(name, "no such resource or parameter in the template")
        if self.resources[name].get("Type") in _REF_IS_ARN:
            return self.arn(name)
        return self.generated_name(name)

    def _get_att(self, target: list[str] | str) -> str:
        logical_id, attribute = target.split(".", 1) if isinstance(target, str) else target
        if logical_id not in self.resources:
            raise UnresolvedReferenceError(logical_id, "no such resource in the template")
        return self.arn(logical_id) if attribute.endswith("Arn") else self.generated_name(logical_id)

    def generated_name(self, logical_id: str) -> str:
        return f"{self.stack}-{logical_id}-{_GENERATED_SUFFIX}"[:_GENERATED_NAME_LIMIT]

    def arn(self, logical_id: str) -> str:
        # AWS::DynamoDB::Table -> dynamodb, table
        _, namespace, kind = str(self.resources[logical_id]["Type"]).lower().split("::")
        service = _ARN_SERVICES.get(namespace, namespace)
        separator = ":" if service in _COLON_ARNS else "/"
        resource = f"{kind}{separator}{self.generated_name(logical_id)}"
        return f"arn:{PARTITION}:{service}:{self.region}:{ACCOUNT_ID}:{resource}"

    def target(self, reference: Any, resource_type: str) -> str | None:
        """The logical id of the ``resource_type`` resource a Ref or Fn::GetAtt names, if it is one."""
        if not isinstance(reference, dict) or len(reference) != 1:
            return None
        ((key, value),) = reference.items()
        if key == "Ref":
            logical_id = value
        elif key == "Fn::GetAtt":
            logical_id = value.split(".", 1)[0] if isinstance(value, str) else value[0]
        else:
            return None
        if self.resources.get(logical_id, {}).get("Type") != resource_type:
            return None
        return str(logical_id)


StackCheck = Callable[[str, _DeployedNames], Iterator[Refusal]]


def _template_size(stack: str, template: _DeployedNames) -> Iterator[Refusal]:
    # The CDK writes a template as JSON indented by one space: that file is what CloudFormation reads.
    size = len(json.dumps(template.body, indent=1, ensure_ascii=False).encode())
    if size > MAX_TEMPLATE_BYTES:
        yield Refusal(stack, TEMPLATE, f"Template may not exceed {MAX_TEMPLATE_BYTES} bytes in size.")


def _section_counts(stack: str, template: _DeployedNames) -> Iterator[Refusal]:
    resources = len(template.resources)
    if resources > MAX_RESOURCES:
        yield Refusal(
            stack,
            "Resources",
            f"Template format error: Number of resources, {resources}, is greater than maximum allowed, "
            f"{MAX_RESOURCES}",
        )
    for section, wording, limit in (
        ("Outputs", "Outputs count", MAX_OUTPUTS),
        ("Parameters", "Parameter count", MAX_PARAMETERS),
        ("Mappings", "Mappings count", MAX_MAPPINGS),
    ):
        count = len(template.body.get(section, {}))
        if count > limit:
            yield Refusal(
                stack,
                section,
                f"Template format error: {wording} {count} is greater than max allowed {limit}",
            )


def _logical_ids(stack: str, template: _DeployedNames) -> Iterator[Refusal]:
    for logical_id in template.resources:
        if not _ALPHANUMERIC.fullmatch(logical_id):
            yield Refusal(
                stack, logical_id, f"Template format error: Resource name {logical_id} is non alphanumeric."
            )
        elif len(logical_id) > MAX_LOGICAL_ID:
            yield Refusal(
                stack,
                logical_id,
                f"Template format error: Resource name {logical_id} is longer than {MAX_LOGICAL_ID} "
                "characters.",
            )


def _queue_visibility(stack: str, template: _DeployedNames) -> Iterator[Refusal]:
    """Lambda refuses to consume a queue that could show a message again while the function still runs."""
    for logical_id in template.of_type("AWS::Lambda::EventSourceMapping"):
        props = template.properties(logical_id)
        queue = template.target(props.get("EventSourceArn"), "AWS::SQS::Queue")
        function = template.target(props.get("FunctionName"), "AWS::Lambda::Function")
        if queue is None or function is None:
            continue
        visibility = int(template.properties(queue).get("VisibilityTimeout", DEFAULT_VISIBILITY_TIMEOUT_S))
        timeout = int(template.properties(function).get("Timeout", DEFAULT_FUNCTION_TIMEOUT_S))
        if visibility < timeout:
            yield Refusal(
                stack,
                logical_id,
                f"Queue visibility timeout: {visibility} seconds is less than Function timeout: {timeout} "
                "seconds",
            )


def _functions(stack: str, template: _DeployedNames) -> Iterator[Refusal]:
    for logical_id in template.of_type("AWS::Lambda::Function"):
        props = template.properties(logical_id)
        name = props.get("FunctionName")
        if isinstance(name, str) and len(name) > MAX_FUNCTION_NAME:
            yield Refusal(
                stack,
                logical_id,
                _invalid("functionName", f"have length less than or equal to {MAX_FUNCTION_NAME}", name),
            )
        storage = props.get("EphemeralStorage", {}).get("Size")
        if storage is not None and not MIN_EPHEMERAL_MB <= int(storage) <= MAX_EPHEMERAL_MB:
            bound = (
                f"greater than or equal to {MIN_EPHEMERAL_MB}"
                if int(storage) < MIN_EPHEMERAL_MB
                else f"less than or equal to {MAX_EPHEMERAL_MB}"
            )
            yield Refusal(
                stack,
                logical_id,
                _invalid("ephemeralStorage.size", f"have value {bound}", storage),
            )
        variables = template.resolve(props.get("Environment", {}).get("Variables", {}))
        measured = json.dumps(variables, separators=(",", ":"))
        if len(measured.encode()) > MAX_ENVIRONMENT_BYTES:
            yield Refusal(
                stack,
                logical_id,
                "Lambda was unable to configure your environment variables because the environment variables "
                f"you have provided exceeded the 4KB limit. String measured: {measured}",
            )


def _reserved_concurrency(stacks: Mapping[str, Mapping[str, Any]]) -> Iterator[Refusal]:
    """Reserved concurrency is the account's, shared by every stack: the function that reserves past what
    Lambda must keep unreserved is refused."""
    reserved = 0
    for stack, body in stacks.items():
        template = StackTemplate(dict(body))
        for logical_id in template.of_type("AWS::Lambda::Function"):
            amount = template.properties(logical_id).get("ReservedConcurrentExecutions")
            if amount is None:
                continue
            reserved += int(amount)
            if ACCOUNT_CONCURRENCY - reserved < MIN_UNRESERVED_CONCURRENCY:
                yield Refusal(
                    stack,
                    logical_id,
                    "Specified ReservedConcurrentExecutions for function decreases account's "
                    "UnreservedConcurrentExecution below its minimum value of "
                    f"[{MIN_UNRESERVED_CONCURRENCY}].",
                )


def _policy_chars(template: _DeployedNames, document: Any) -> int:
    return len(_WHITESPACE.sub("", json.dumps(template.resolve(document))))


def _attached_roles(template: _DeployedNames, policy: Mapping[str, Any]) -> Iterator[str]:
    """The roles of this template a policy resource attaches itself to."""
    for reference in policy.get("Roles", []):
        role = template.target(reference, "AWS::IAM::Role")
        if role is not None:
            yield role


def _roles(stack: str, template: _DeployedNames) -> Iterator[Refusal]:
    """IAM's quotas on a role: its inline policies together, and how many managed policies it has."""
    inline: dict[str, int] = defaultdict(int)
    managed: dict[str, int] = defaultdict(int)
    for role in template.of_type("AWS::IAM::Role"):
        props = template.properties(role)
        inline[role] += sum(
            _policy_chars(template, policy["PolicyDocument"]) for policy in props.get("Policies", [])
        )
        managed[role] += len(props.get("ManagedPolicyArns", []))
    # CDK's grants land in AWS::IAM::Policy resources, which CloudFormation puts as the roles' inline
    # policies.
    for policy in template.of_type("AWS::IAM::Policy"):
        props = template.properties(policy)
        size = _policy_chars(template, props["PolicyDocument"])
        for attached in _attached_roles(template, props):
            inline[attached] += size
    for policy in template.of_type("AWS::IAM::ManagedPolicy"):
        props = template.properties(policy)
        if _policy_chars(template, props["PolicyDocument"]) > MAX_MANAGED_POLICY_CHARS:
            yield Refusal(stack, policy, f"Cannot exceed quota for PolicySize: {MAX_MANAGED_POLICY_CHARS}")
        for attached in _attached_roles(template, props):
            managed[attached] += 1
    for role, size in inline.items():
        if size > MAX_ROLE_INLINE_POLICY_CHARS:
            name = template.resolve(template.properties(role).get("RoleName", {"Ref": role}))
            yield Refusal(
                stack,
                role,
                f"Maximum policy size of {MAX_ROLE_INLINE_POLICY_CHARS} bytes exceeded for role {name}",
            )
    for role, count in managed.items():
        if count > MAX_MANAGED_POLICIES_PER_ROLE:
            yield Refusal(
                stack, role, f"Cannot exceed quota for PoliciesPerRole: {MAX_MANAGED_POLICIES_PER_ROLE}"
            )


def _state_machines(stack: str, template: _DeployedNames) -> Iterator[Refusal]:
    for logical_id in template.of_type("AWS::StepFunctions::StateMachine"):
        size = len(template.state_machine_definition(logical_id).encode())
        if size > MAX_DEFINITION_BYTES:
            yield Refusal(
                stack,
                logical_id,
                # The definition is a sensitive member: AWS leaves its value out of the message.
                _invalid("definition", f"have length less than or equal to {MAX_DEFINITION_BYTES}"),
            )


def _bucket_names(stack: str, template: _DeployedNames) -> Iterator[Refusal]:
    """S3's naming rules for a name the template sets (a generated one keeps to them)."""
    for logical_id in template.of_type("AWS::S3::Bucket"):
        name = template.properties(logical_id).get("BucketName")
        if not isinstance(name, str):
            continue
        valid = (
            _BUCKET_NAME.fullmatch(name) is not None
            and ".." not in name
            and _IP_ADDRESS.fullmatch(name) is None
            and not name.startswith(("xn--", "sthree-"))
            and not name.endswith(("-s3alias", "--ol-s3"))
        )
        if not valid:
            yield Refusal(stack, logical_id, "The specified bucket is not valid.")


def _invalid(member: str, constraint: str, value: Any = None) -> str:
    """A service's answer to a request member outside its constraint."""
    shown = "" if value is None else f" '{value}'"
    return (
        f"1 validation error detected: Value{shown} at '{member}' failed to satisfy constraint: "
        f"Member must {constraint}"
    )


STACK_CHECKS: tuple[StackCheck, ...] = (
    _template_size,
    _section_counts,
    _logical_ids,
    _queue_visibility,
    _functions,
    _roles,
    _state_machines,
    _bucket_names,
)
