"""Building the finetune artifact streams its inputs: peak memory does not grow with the number of cases."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

from finetune_inputs import write_large_inputs

from benchgen.finetune.artifact import build_artifact
from benchgen.runs import RunInfo

RUN = RunInfo(
    run_id="run-mem",
    environment_id="gsm8k",
    environment_version="1",
    model="Qwen2.5-7B-LoRA",
    benchmark="GSM8K",
    overall_score=0.5,
    finished_at=datetime(2026, 6, 14, 12, 0, tzinfo=UTC),
)
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
    # given a warm-up build, so one-time costs (imports, caches) do not inflate the small build's peak
    build_peak(tmp_path / "warm", 200)
    # when artifacts are built from 2,000 and from 20,000 judged cases
    small = build_peak(tmp_path / "small", SMALL)
    large = build_peak(tmp_path / "large", LARGE)
    # then ten times the cases costs well under twice the memory
    assert large < 2 * small, f"peak {small:,} B at {SMALL:,} cases, {large:,} B at {LARGE:,} cases"
