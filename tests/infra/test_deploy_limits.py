"""The synthesized application against what CloudFormation and the services refuse at deploy time."""

from __future__ import annotations

from typing import Any

from localcloud.deploy_checks import deploy_refusals


def test_every_synthesized_stack_passes_every_deploy_time_check(
    stack_templates: dict[str, dict[str, Any]],
) -> None:
    assert len(stack_templates) == 4
    assert [str(refusal) for refusal in deploy_refusals(stack_templates)] == []
