"""The local cloud for integration tests: the synthesized stack's resources on moto."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from benchgen.settings import Settings, load_settings
from infra.local.cloud import LocalCloud

EVENT_DRIVEN = ("register_environment", "ingest", "score", "build_artifact")


def _idle(event: Any, context: Any) -> None:
    return None


@pytest.fixture
def aws(stack_template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """A fresh local cloud whose event-driven functions do nothing, for tests of the API alone.

    Yields the settings every function reads (the same names the stack gives them).
    """
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    with LocalCloud(copy.deepcopy(stack_template), handlers=dict.fromkeys(EVENT_DRIVEN, _idle)):
        yield load_settings()


@pytest.fixture
def cloud(stack_template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCloud]:
    """A fresh local cloud running the real handlers: uploads flow through the whole pipeline."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    with LocalCloud(copy.deepcopy(stack_template)) as started:
        yield started
