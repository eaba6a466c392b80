"""A preparation's time and memory beside the run artifact's, on the same scored run.

For each size it generates a GSM8K-style math environment and a submission with the example generator,
scores it once (not measured), then measures, each in a fresh Python process so that the peak memory of
one step cannot show up in another's:

- artifact: what scoring adds for training, ``build_artifact`` (seeds, 5x augmentation, pool, four formats);
- preparation: ``generate`` for a demonstration preparation with the bundle's settings (the same seeds,
  variants and pool rows, plus the held-out list and the held-out guard on every row), then the check a
  preparation's pipeline runs after it: ``coverage`` and ``check_held_out`` over the written files.

It prints, per size, the wall time and peak RSS of both, the preparation/artifact ratios, and how peak
memory grows from the smallest to the largest size (flat means streaming works).

    python bench/preparation_bench.py                      # 10,000 and 100,000 cases
    python bench/preparation_bench.py --sizes 2000         # a quick run
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from measure import Step, bench_main, growth_line, in_fresh_process, peak_rss_mb

ENVIRONMENT = "gsm8k-tr"
VERSION = "bench"
RUN_ID = "bench-run"
SEED = 1234
DEFAULT_SIZES = "10000,100000"


def score_once(bundle: Path, submission: Path, out: Path) -> dict[str, Any]:
    from benchgen.environment import open_environment
    from benchgen.ingest import ingest
    from benchgen.scoring.engine import score_predictions

    started = time.perf_counter()
    env = open_environment(bundle, out / "work" / "environment")
    ingested = ingest(env, submission, out, workdir=out / "work" / "ingest")
    scored = score_predictions(env, ingested.prediction_output, out, workdir=out / "work" / "score")
    return {"seconds": time.perf_counter() - started, "overall_score": scored.overall_score}


def measure_artifact(bundle: Path, scoring_output: Path, out: Path) -> dict[str, Any]:
    from benchgen.environment import open_environment
    from benchgen.finetune.artifact import build_artifact
    from benchgen.records.runs import RunInfo

    env = open_environment(bundle, out / "work" / "environment")
    run = RunInfo(
        run_id=RUN_ID,
        environment_id=ENVIRONMENT,
        environment_version=VERSION,
        model="bench-model",
        benchmark=env.spec.title,
        overall_score=None,
        finished_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    started = time.perf_counter()
    report = build_artifact(env, scoring_output, out, run=run)
    return {"seconds": time.perf_counter() - started, "examples": report.example_count}


def _examples(path: Path) -> Iterator[Any]:
    from benchgen.training.examples import PreparedExample

    with path.open("rb") as stream:
        for line in stream:
            yield PreparedExample.model_validate_json(line)


def _held_out(path: Path) -> Iterator[Any]:
    from benchgen.training.examples import HeldOutCase

    with path.open("rb") as stream:
        for line in stream:
            yield HeldOutCase.model_validate_json(line)


def measure_preparation(bundle: Path, scoring_output: Path, out: Path) -> dict[str, Any]:
    from benchgen.environment import open_environment
    from benchgen.training.coverage import check_held_out, coverage
    from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
    from benchgen.training.preparation import PreparationSpec, RunSource, criteria_scope, generate

    env = open_environment(bundle, out / "work" / "environment")
    spec = PreparationSpec(
        environment_id=ENVIRONMENT, environment_version=VERSION, method="demonstration", run_ids=[RUN_ID]
    )
    run = RunSource(RUN_ID, "bench-model", ENVIRONMENT, VERSION, scoring_output)
    started = time.perf_counter()
    report = generate(spec, env, [run], out / "preparation")
    generated = time.perf_counter()
    generate_peak = peak_rss_mb()
    gaps = coverage(_examples(out / "preparation" / EXAMPLES_NAME), scope=criteria_scope(spec, env)).gaps
    problems = check_held_out(
        _examples(out / "preparation" / EXAMPLES_NAME), _held_out(out / "preparation" / HELD_OUT_NAME)
    )
    return {
        "seconds": generated - started,
        "check_seconds": time.perf_counter() - generated,
        "generate_peak_rss_mb": generate_peak,
        "examples": report.example_count,
        "held_out": report.held_out_count,
        "dropped": report.dropped,
        "gaps": len(gaps),
        "held_out_problems": len(problems),
    }


def run_bench(sizes: list[int], root: Path, _arguments: argparse.Namespace) -> list[dict[str, Any]]:
    from benchgen.outputs import RunOutput
    from infra.examplegen import generate_environment

    results: list[dict[str, Any]] = []
    print(f"{'cases':>10}  {'step':<11}  {'examples':>9}  {'seconds':>8}  {'peak RSS MB':>11}")
    for size in sizes:
        target = root / f"n{size}"
        made = generate_environment(ENVIRONMENT, target / "generated", cases=size, seed=SEED)
        scored = in_fresh_process(__file__, "score", made.bundle_dir, made.submission_path, target / "scored")
        scoring_output = RunOutput.SCORING_OUTPUT.path_in(target / "scored")
        artifact = in_fresh_process(
            __file__, "artifact", made.bundle_dir, scoring_output, target / "artifact"
        )
        preparation = in_fresh_process(
            __file__, "preparation", made.bundle_dir, scoring_output, target / "preparation"
        )
        for step, result in (("artifact", artifact), ("preparation", preparation)):
            print(
                f"{size:>10,}  {step:<11}  {result['examples']:>9,}  {result['seconds']:>8.2f}  "
                f"{result['peak_rss_mb']:>11.1f}"
            )
        print(
            f"{'':>10}  preparation/artifact: time x{preparation['seconds'] / artifact['seconds']:.2f}, "
            f"memory x{preparation['peak_rss_mb'] / artifact['peak_rss_mb']:.2f}  (check: coverage and "
            f"held-out {preparation['check_seconds']:.1f}s, {preparation['gaps']} gaps, "
            f"{preparation['held_out_problems']} held-out problems; {preparation['held_out']:,} held out, "
            f"{sum(preparation['dropped'].values()):,} rows dropped; scored in {scored['seconds']:.1f}s)"
        )
        results.append({"size": size, "artifact": artifact, "preparation": preparation, "score": scored})
    if len(results) > 1:
        print(growth_line(results, ("preparation", "artifact")))
    return results


def main(argv: list[str] | None = None) -> int:
    steps: dict[str, Step] = {
        "score": score_once,
        "artifact": measure_artifact,
        "preparation": measure_preparation,
    }
    return bench_main(argv, description=__doc__, default_sizes=DEFAULT_SIZES, steps=steps, bench=run_bench)


if __name__ == "__main__":
    sys.exit(main())
