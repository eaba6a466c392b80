"""The artifact engine's part API, as the shard steps call it: collected per shard, merged once.

Imported on first use: only the shard steps and a sharded run's artifact step need it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchgen.environment import Environment


def _call(module: str, name: str, *args: Any, **kwargs: Any) -> Any:
    return getattr(importlib.import_module(module), name)(*args, **kwargs)


def collect_part(
    env: Environment, verdicts: Path, cases: Path | None, part_dir: Path, *, run_id: str
) -> None:
    _call("benchgen.finetune.parts", "collect_part", env, verdicts, cases, part_dir, run_id=run_id)


def finish_artifact(env: Environment, parts: Sequence[Path], out_dir: Path, *, run: Any) -> Any:
    return _call("benchgen.finetune.parts", "finish_artifact", env, parts, out_dir, run=run)
