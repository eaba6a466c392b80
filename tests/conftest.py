"""What every test layer shares: one in-process synthesis of the BenchGen stacks per test session."""

from __future__ import annotations

from typing import Any

import pytest

from infra.node_notices import silence_node_release_banners

silence_node_release_banners()


@pytest.fixture(scope="session")
def synthesis() -> Any:
    """The stacks' templates and cdk-nag findings (synthesis starts Node.js and takes seconds: once)."""
    from infra.synth import synthesize

    return synthesize()


@pytest.fixture(scope="session")
def stack_templates(synthesis: Any) -> dict[str, dict[str, Any]]:
    """Each stack's template by stack name, in deployment order: what `cdk deploy --all` deploys."""
    templates: dict[str, dict[str, Any]] = synthesis.stacks
    return templates


@pytest.fixture(scope="session")
def stack_template(synthesis: Any) -> dict[str, Any]:
    """The application as one template, its stacks merged: resources by logical id, wherever they live."""
    template: dict[str, Any] = synthesis.template
    return template


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How many AWS calls of functions and state machines the local clouds authorized against their
    roles' policies in this session (see localcloud/iam/enforcement.py)."""
    from localcloud.iam.enforcement import IamEnforcement

    if IamEnforcement.total_checked:
        terminalreporter.write_line(
            f"IAM: {IamEnforcement.total_checked} AWS calls checked against their caller's role "
            f"({IamEnforcement.total_refused} refused)"
        )
