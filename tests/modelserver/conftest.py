"""One tiny model per test session, and a server of it per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.modelserver.tiny_model import build_tiny_model


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "tiny-chat")
