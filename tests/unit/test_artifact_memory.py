"""Building the finetune artifact streams its inputs: peak memory does not grow with the number of cases."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from finetune_inputs import RUN, assert_memory_flat, write_large_inputs

from benchgen.finetune.artifact import build_artifact

SMALL, LARGE = 2_000, 20_000


def build_peak(root: Path, cases: int) -> int:
    """Peak bytes Python allocated while building the artifact of ``cases`` judged cases."""
    env, output = write_large_inputs(root, cases)
    tracemalloc.start()
    try:
        report = build_artifact(env, output, root / "out", run=RUN)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.example_count == cases  # half the cases wrong, each a seed plus one variant
    return peak


def test_peak_memory_stays_flat_as_cases_grow(tmp_path: Path) -> None:
    # artifacts are built from 2,000 and from 20,000 judged cases: ten times the cases, under twice the memory
    assert_memory_flat(build_peak, tmp_path, SMALL, LARGE)
