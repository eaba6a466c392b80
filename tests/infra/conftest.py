"""One in-process synthesis of the BenchGen stack per test session, and readers of its template."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from infra.references import render as render_value

Template = dict[str, Any]
Resource = dict[str, Any]


@pytest.fixture(scope="session")
def template(stack_template: Template) -> Template:
    return stack_template


@pytest.fixture(scope="session")
def resources(template: Template) -> dict[str, Resource]:
    result: dict[str, Resource] = template["Resources"]
    return result


def _of_type(resources: dict[str, Resource], kind: str) -> dict[str, Resource]:
    return {logical_id: r for logical_id, r in resources.items() if r["Type"] == kind}


@pytest.fixture(scope="session")
def of_type(resources: dict[str, Resource]) -> Callable[[str], dict[str, Resource]]:
    """Resources of one CloudFormation type, by logical id."""
    return lambda kind: _of_type(resources, kind)


def _functions(resources: dict[str, Resource]) -> dict[str, Resource]:
    found: dict[str, Resource] = {}
    for function in _of_type(resources, "AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        if "POWERTOOLS_SERVICE_NAME" in variables:
            found[variables["POWERTOOLS_SERVICE_NAME"]] = function
    return found


@pytest.fixture(scope="session")
def functions(resources: dict[str, Resource]) -> dict[str, Resource]:
    """Our Lambda functions by POWERTOOLS_SERVICE_NAME (CDK's own helper functions have none)."""
    return _functions(resources)


@pytest.fixture(scope="session")
def functions_of() -> Callable[[dict[str, Resource]], dict[str, Resource]]:
    """The same reading for the resources of another synthesis."""
    return _functions


def _statements(policy: Resource) -> Iterator[dict[str, Any]]:
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        actions = statement["Action"]
        resources = statement["Resource"]
        yield {
            "Effect": statement["Effect"],
            "Action": [actions] if isinstance(actions, str) else list(actions),
            "Resource": [
                render_value(r) for r in (resources if isinstance(resources, list) else [resources])
            ],
            **({"Condition": statement["Condition"]} if "Condition" in statement else {}),
        }


@pytest.fixture(scope="session")
def role_statements(resources: dict[str, Resource], functions: dict[str, Resource]) -> dict[str, list[Any]]:
    """Every policy statement attached to each function's role, by function name, references rendered."""
    policies = _of_type(resources, "AWS::IAM::Policy")
    found: dict[str, list[Any]] = {}
    for name, function in functions.items():
        role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
        found[name] = [
            statement
            for policy in policies.values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
            for statement in _statements(policy)
        ]
    return found


def _definition(machine: Resource) -> dict[str, Any]:
    """A state machine definition, its Fn::Join parts joined with ${...} placeholders for references."""
    parsed: dict[str, Any] = json.loads(render_value(machine["Properties"]["DefinitionString"]))
    return parsed


@pytest.fixture(scope="session")
def state_machine(resources: dict[str, Resource]) -> Resource:
    """The artifact pipeline (the other state machines are read by their own tests)."""
    return resources["ArtifactPipeline"]


@pytest.fixture(scope="session")
def definition(state_machine: Resource) -> dict[str, Any]:
    return _definition(state_machine)


@pytest.fixture(scope="session")
def package_machine(resources: dict[str, Resource]) -> Resource:
    """The package pipeline."""
    return resources["PackagePipeline"]


@pytest.fixture(scope="session")
def package_definition(package_machine: Resource) -> dict[str, Any]:
    return _definition(package_machine)


@pytest.fixture(scope="session")
def training_definition(resources: dict[str, Resource]) -> dict[str, Any]:
    return _definition(resources["TrainingPipeline"])


@pytest.fixture(scope="session")
def render() -> Callable[[Any], str]:
    return render_value


@pytest.fixture(scope="session")
def function_ids(resources: dict[str, Resource], functions: dict[str, Resource]) -> dict[str, str]:
    """Logical id of each of our functions, by function name."""
    by_identity = {id(resource): logical_id for logical_id, resource in resources.items()}
    return {name: by_identity[id(function)] for name, function in functions.items()}


@pytest.fixture(scope="session")
def inference_definition(resources: dict[str, Resource]) -> dict[str, Any]:
    """The InferencePipeline definition, read like ``definition``."""
    parsed: dict[str, Any] = json.loads(
        render_value(resources["InferencePipeline"]["Properties"]["DefinitionString"])
    )
    return parsed
