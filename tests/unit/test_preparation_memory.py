"""Generating a preparation streams its inputs: peak memory does not grow with the number of cases."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from benchgen.training.preparation import PreparationSpec, RunSource, generate
from tests.unit.finetune_inputs import assert_memory_flat, write_large_inputs

SMALL, LARGE = 2_000, 20_000


def generate_peak(root: Path, cases: int) -> int:
    """Peak bytes Python allocated while preparing ``cases`` judged cases, held-out list included."""
    env, output = write_large_inputs(root, cases)
    spec = PreparationSpec(
        environment_id="gsm8k", environment_version="1", method="preference", run_ids=["run-mem"]
    )
    run = RunSource("run-mem", "Qwen2.5-7B-LoRA", "gsm8k", "1", output)
    tracemalloc.start()
    try:
        report = generate(spec, env, [run], root / "out")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # half the cases wrong, each a seed plus one variant, and a tenth of all cases held out
    assert report.example_count == cases
    assert 0.08 * cases < report.held_out_count < 0.12 * cases
    return peak


def test_peak_memory_stays_flat_as_cases_grow(tmp_path: Path) -> None:
    # preparations from 2,000 and from 20,000 judged cases: ten times the cases, under twice the memory
    assert_memory_flat(generate_peak, tmp_path, SMALL, LARGE)
