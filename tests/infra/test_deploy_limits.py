"""The synthesized application against what CloudFormation and the services refuse at deploy time."""

from __future__ import annotations

from typing import Any

from infra.stack import STACK_NAME
from localcloud.deploy_checks import deploy_refusals


def test_the_synthesized_application_passes_every_deploy_time_check(stack_template: dict[str, Any]) -> None:
    assert [str(refusal) for refusal in deploy_refusals({STACK_NAME: stack_template})] == []
