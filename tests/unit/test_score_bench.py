"""The scoring bench's own logic: the shard inputs it cuts, and the verdicts it draws from its figures.

No timing is asserted: the figures below are given, and only what the bench concludes from them is checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> dict[str, ModuleType]:
    """The bench scripts as they run: from their folder, importing each other by module name."""
    import importlib

    monkeypatch.syspath_prepend(str(BENCH))
    return {name: importlib.import_module(name) for name in ("sharded", "score_bench")}


def test_the_shards_hold_the_runs_cases_and_predictions_in_order_with_its_metadata(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    from benchgen.environment import open_environment
    from benchgen.ingest import ingest
    from benchgen.submission import open_predictions
    from examplegen import generate_environment
    from examplegen.base import REFERENCE_DIR

    # Given a 50-case run ingested whole (about 30% of the answers wrong, some cases unanswered)
    made = generate_environment("gsm8k-tr", tmp_path / "made", cases=50, seed=7)
    env = open_environment(made.bundle_dir, tmp_path / "env")
    ingest(env, made.submission_path, tmp_path / "run", workdir=tmp_path / "work")
    cases = made.bundle_dir / REFERENCE_DIR / "cases.jsonl"

    # When it is cut into shards of 20 cases
    shards = bench["sharded"].split_run(cases, tmp_path / "run" / "prediction_output.zip", 20, tmp_path / "s")

    # Then the shards' case lines, one after another, are the run's, and so are their predictions, each
    # shard's output carrying the whole run's metadata
    assert [len((shard / "cases.jsonl").read_text().splitlines()) for shard in shards] == [20, 20, 10]
    assert b"".join((shard / "cases.jsonl").read_bytes() for shard in shards) == cases.read_bytes()
    with open_predictions(tmp_path / "run" / "prediction_output.zip") as whole:
        expected = list(whole)
        metadata = whole.metadata
    seen = []
    for shard in shards:
        with open_predictions(shard / "prediction_output.zip") as stream:
            seen += list(stream)
            assert stream.metadata == metadata
    assert seen == expected
    shard_ids = {json.loads(line)["id"] for line in (shards[0] / "cases.jsonl").read_text().splitlines()}
    with open_predictions(shards[0] / "prediction_output.zip") as first:
        assert {prediction.id for prediction in first} <= shard_ids


def _size(
    size: int, *, score: float, artifact: float, floor: float, run_peak: float, shard_peak: float
) -> dict[str, Any]:
    step = {"cpu_seconds": 0.0, "seconds": 0.0, "peak_rss_mb": shard_peak}
    return {
        "size": size,
        "run": {
            "stages": {"score": {"cpu_seconds": score}, "artifact": {"cpu_seconds": artifact}},
            "peak_rss_mb": run_peak,
        },
        "floor": {"cpu_seconds": floor},
        "sharded": {
            "shards": [{"score": step, "artifact": step}],
            "finish_scores": step,
            "finish_artifact": step,
        },
    }


def test_each_target_passes_or_misses_by_the_figures_measured(bench: dict[str, ModuleType]) -> None:
    # Given one size that meets every target, and one that misses each (figures as the bench records them)
    results = [
        _size(300_000, score=4.0, artifact=6.0, floor=4.0, run_peak=120.0, shard_peak=299.0),
        _size(1_000_000, score=20.0, artifact=20.0, floor=10.0, run_peak=300.0, shard_peak=310.0),
    ]
    imports = {
        "functions": {"score": {"no_bytecode_cpu_seconds": 0.249}, "api": {"no_bytecode_cpu_seconds": 0.25}}
    }

    # When the bench draws its verdicts
    rows = bench["score_bench"].verdicts(results, imports)

    # Then 30,000 cases/s (300,000 in 10 s) and x2.5 pass, 25,000 cases/s and x4 miss; memory passes under
    # 300 MB only; an import passes under 250 ms only
    verdicts = {(row["target"], row["size"]): (round(row["value"], 3), row["pass"]) for row in rows}
    assert verdicts == {
        ("score + artifact, cases/s of one core", 300_000): (30_000.0, True),
        ("score + artifact, cases/s of one core", 1_000_000): (25_000.0, False),
        ("score + artifact / floor", 300_000): (2.5, True),
        ("score + artifact / floor", 1_000_000): (4.0, False),
        ("peak RSS MB, whole run", 300_000): (120.0, True),
        ("peak RSS MB, whole run", 1_000_000): (300.0, False),
        ("peak RSS MB, worst sharded step", 300_000): (299.0, True),
        ("peak RSS MB, worst sharded step", 1_000_000): (310.0, False),
        ("import ms (cpu), score", None): (249.0, True),
        ("import ms (cpu), api", None): (250.0, False),
    }
