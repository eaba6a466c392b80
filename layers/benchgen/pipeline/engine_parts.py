"""The engine's part API, as the shard steps call it: judged and collected per shard, merged once.

Imported on first use: each step needs one of the two modules, and neither at import time.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchgen.environment import Environment
from benchgen.sandbox.job import Sandbox


def _call(module: str, name: str, *args: Any, **kwargs: Any) -> Any:
    return getattr(importlib.import_module(module), name)(*args, **kwargs)


def score_part(
    env: Environment,
    cases: Path,
    prediction_output: Path,
    part_dir: Path,
    *,
    workdir: Path,
    sandbox: Sandbox | None = None,
) -> None:
    _call(
        "benchgen.scoring.parts",
        "score_part",
        env,
        cases,
        prediction_output,
        part_dir,
        workdir=workdir,
        sandbox=sandbox,
    )


def finish_scores(env: Environment, parts: Sequence[Path], out_dir: Path) -> Any:
    return _call("benchgen.scoring.parts", "finish_scores", env, parts, out_dir)


def collect_part(
    env: Environment, verdicts: Path, cases: Path | None, part_dir: Path, *, run_id: str
) -> None:
    _call("benchgen.finetune.parts", "collect_part", env, verdicts, cases, part_dir, run_id=run_id)


def finish_artifact(env: Environment, parts: Sequence[Path], out_dir: Path, *, run: Any) -> Any:
    return _call("benchgen.finetune.parts", "finish_artifact", env, parts, out_dir, run=run)
