"""Reading an example's own files, to work out its expected values without BenchGen."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def words(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split()


def submitted_model(path: Path) -> ModuleType:
    """The submitted ``model.py`` at ``path``, imported here as the ingestion program imports it."""
    spec = importlib.util.spec_from_file_location("submitted_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
