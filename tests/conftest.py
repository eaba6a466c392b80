"""What every test layer shares: one in-process synthesis of the BenchGen stack per test session."""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")


@pytest.fixture(scope="session")
def synthesis() -> Any:
    """The stack's template and cdk-nag findings (synthesis starts Node.js and takes seconds: once)."""
    from infra.synth import synthesize

    return synthesize()


@pytest.fixture(scope="session")
def stack_template(synthesis: Any) -> dict[str, Any]:
    template: dict[str, Any] = synthesis.template
    return template
