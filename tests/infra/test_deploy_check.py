"""The deploy check over the real app, synthesized once by the CDK CLI exactly as an operator runs it
(``npx --yes aws-cdk@2 synth``: about a minute with the checks, plus npx's download of the CLI the first
time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.assembly import stack_templates
from infra.deploy_check import RESOURCE_LIMIT, DeployCheck, check_assembly, synthesize_with_cli

# The state machines the app defines, wherever the stacks put them.
STATE_MACHINES = {
    "ArtifactPipeline",
    "ShardedScoring",
    "PreparationPipeline",
    "PackagePipeline",
    "InferencePipeline",
    "TrainingPipeline",
    "EvaluationPipeline",
}


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("cdk.out")
    synthesize_with_cli(outdir)
    return outdir


@pytest.fixture(scope="module")
def check(assembly: Path) -> DeployCheck:
    return check_assembly(assembly)


def test_the_cli_synthesizes_a_template_for_every_stack_of_the_manifest(assembly: Path) -> None:
    # Given the cloud assembly the CDK CLI wrote, when its manifest's stacks are read
    templates = stack_templates(assembly)

    # Then there is at least one, and each template holds resources
    assert templates
    assert all(template.body["Resources"] for template in templates)


def test_cfn_lint_finds_nothing_in_any_stack_template(check: DeployCheck) -> None:
    # Given every stack template linted with the repository's settings, then none has a finding
    assert {stack.name: [str(f) for f in stack.lint] for stack in check.stacks} == {
        stack.name: [] for stack in check.stacks
    }


def test_every_state_machine_is_valid_states_language(check: DeployCheck) -> None:
    # Given asl-validator's errors in each state machine of every stack
    errors = {machine: found for stack in check.stacks for machine, found in stack.machines.items()}

    # Then the app's seven machines were all read, and none has an error
    assert set(errors) >= STATE_MACHINES
    assert {machine: found for machine, found in errors.items() if found} == {}


def test_cdk_nag_has_no_unacknowledged_finding(check: DeployCheck) -> None:
    # Given cdk-nag's report in the cloud assembly, then every finding in it was acknowledged
    assert check.nag == []


def test_every_stack_holds_at_most_300_resources(check: DeployCheck) -> None:
    # Given each stack's resource count, then none is above the limit.
    # Fails while the app is one stack (451 resources): it passes once the stack is split into several.
    assert {stack.name: stack.resources for stack in check.stacks if stack.resources > RESOURCE_LIMIT} == {}
