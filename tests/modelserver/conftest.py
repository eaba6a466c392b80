"""One tiny model per test session, and a server of it per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchgen.aws.providers.openai_compatible import OpenAICompatibleJobs
from modelserver.server import ModelServer
from tests.modelserver.tiny_model import build_tiny_model


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "tiny-chat")


@pytest.fixture(scope="module")
def server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    """A server of the tiny model, generating with CTranslate2, for one module's tests."""
    with ModelServer(str(tiny_model), work=tmp_path_factory.mktemp("work"), engine="ctranslate2") as running:
        yield running


@pytest.fixture
def jobs(server: ModelServer) -> OpenAICompatibleJobs:
    """BenchGen's openai-compatible client of the server's fine-tuning jobs."""
    return OpenAICompatibleJobs(server.base_url, api_key=lambda: None)
