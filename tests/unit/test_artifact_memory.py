"""Building the finetune artifact streams its inputs: past the examples it holds before spilling them to disk,
peak memory grows only by the ids of the cases it selected (kept so that the first verdict of a case wins)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from benchgen.finetune import spool
from benchgen.finetune.artifact import build_artifact
from tests.unit.finetune_inputs import RUN, write_large_inputs

SMALL, LARGE = 2_000, 20_000
# What one selected case id costs: the string and its slot in a set.
ID_BYTES = 200


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


def test_peak_memory_grows_only_by_the_selected_case_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a spool that holds little before it writes a run, so both sizes spill several runs
    monkeypatch.setattr(spool, "SPOOL_BYTES", 256 << 10)
    build_peak(tmp_path / "warm", 200)  # one-time costs (imports, caches) do not count
    # when artifacts are built from 2,000 and from 20,000 judged cases, half of them wrong
    small = build_peak(tmp_path / "small", SMALL)
    large = build_peak(tmp_path / "large", LARGE)
    # then the peak grows by less than the ids of the 9,000 more selected cases take
    assert large - small < ID_BYTES * (LARGE - SMALL) // 2, f"peak {small:,} B, then {large:,} B"
