"""Scoring throughput and memory, at sizes where streaming matters.

For each size it generates a GSM8K-style math environment and a submission with the example generator,
then measures, each in a fresh Python process so that peak memory of one step cannot bleed into another:

- baseline: parse the submission with ``json.load`` and dump the same records to a file, the least any
  scorer that reads the submission has to do;
- full: what ``benchgen score`` does: open the environment, ingest, score, build the finetune artifact.

It prints cases per second and peak RSS for both, the full/baseline ratios, the time and peak RSS so far
after each full stage, and how the full pipeline's peak memory grows from the smallest to the largest size
(flat means streaming works).

    python bench/score_bench.py                      # 100,000 and 1,000,000 cases
    python bench/score_bench.py --sizes 10000        # a quick run
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from measure import Step, bench_main, growth_line, in_fresh_process, peak_rss_mb

ENVIRONMENT = "gsm8k-tr"
SEED = 1234
DEFAULT_SIZES = "100000,1000000"


def measure_baseline(submission: Path, out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    with submission.open(encoding="utf-8") as source:
        document = json.load(source)
    records = document["predictions"]
    with (out / "baseline.json").open("w", encoding="utf-8") as target:
        json.dump({"predictions": records, "metadata": document.get("metadata", {})}, target)
    return {"seconds": time.perf_counter() - started, "cases": len(records)}


def measure_full(bundle: Path, submission: Path, out: Path) -> dict[str, Any]:
    from benchgen.environment import open_environment
    from benchgen.finetune.artifact import build_artifact
    from benchgen.ingest import ingest
    from benchgen.pipeline.keys import PREDICTION_OUTPUT, SCORING_OUTPUT
    from benchgen.runs import RunInfo
    from benchgen.score import score

    stages: dict[str, float] = {}
    peaks: dict[str, float] = {}  # peak RSS so far after each stage: where it jumps, that stage holds memory
    started = time.perf_counter()
    env = open_environment(bundle, out / "work" / "environment")
    mark = time.perf_counter()
    stages["open"] = mark - started
    peaks["open"] = peak_rss_mb()
    ingested = ingest(env, submission, out, workdir=out / "work" / "ingest")
    stages["ingest"] = time.perf_counter() - mark
    peaks["ingest"] = peak_rss_mb()
    mark = time.perf_counter()
    scored = score(env, out / PREDICTION_OUTPUT, out, workdir=out / "work" / "score")
    stages["score"] = time.perf_counter() - mark
    peaks["score"] = peak_rss_mb()
    mark = time.perf_counter()
    run = RunInfo(
        run_id="bench",
        environment_id=ENVIRONMENT,
        environment_version="bench",
        model="bench-model",
        benchmark=env.spec.title,
        overall_score=scored.overall_score,
        finished_at=datetime.now(UTC),
    )
    artifact = build_artifact(env, out / SCORING_OUTPUT, out, run=run)
    stages["artifact"] = time.perf_counter() - mark
    peaks["artifact"] = peak_rss_mb()
    return {
        "seconds": time.perf_counter() - started,
        "cases": ingested.total_questions,
        "stages": stages,
        "stage_peak_rss_mb": peaks,
        "overall_score": scored.overall_score,
        "artifact_examples": artifact.example_count,
    }


def _row(size: int, step: str, result: dict[str, Any]) -> str:
    rate = size / result["seconds"]
    return (
        f"{size:>10,}  {step:<8}  {result['seconds']:>9.2f}  {rate:>10,.0f}  {result['peak_rss_mb']:>11.1f}"
    )


def run_bench(sizes: list[int], root: Path) -> list[dict[str, Any]]:
    from infra.examplegen import generate_environment

    results: list[dict[str, Any]] = []
    print(f"{'cases':>10}  {'step':<8}  {'seconds':>9}  {'cases/s':>10}  {'peak RSS MB':>11}")
    for size in sizes:
        target = root / f"n{size}"
        started = time.perf_counter()
        made = generate_environment(ENVIRONMENT, target / "generated", cases=size, seed=SEED)
        generated_s = time.perf_counter() - started
        baseline = in_fresh_process(
            __file__, "baseline", made.bundle_dir, made.submission_path, target / "baseline"
        )
        full = in_fresh_process(__file__, "full", made.bundle_dir, made.submission_path, target / "full")
        print(_row(size, "baseline", baseline))
        print(_row(size, "full", full))
        stages = "  ".join(
            f"{name} {seconds:.1f}s / {full['stage_peak_rss_mb'][name]:.0f} MB"
            for name, seconds in full["stages"].items()
        )
        print(
            f"{'':>10}  full/baseline: time x{full['seconds'] / baseline['seconds']:.1f}, "
            f"memory x{full['peak_rss_mb'] / baseline['peak_rss_mb']:.2f}  ({stages}; generated in "
            f"{generated_s:.1f}s; {full['artifact_examples']:,} artifact examples)"
        )
        results.append({"size": size, "baseline": baseline, "full": full, "generated_s": generated_s})
    if len(results) > 1:
        print(growth_line(results, ("full", "baseline")))
    return results


def main(argv: list[str] | None = None) -> int:
    steps: dict[str, Step] = {
        "baseline": lambda bundle, submission, out: measure_baseline(submission, out),
        "full": measure_full,
    }
    return bench_main(argv, description=__doc__, default_sizes=DEFAULT_SIZES, steps=steps, bench=run_bench)


if __name__ == "__main__":
    sys.exit(main())
