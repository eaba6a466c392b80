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

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ENVIRONMENT = "gsm8k-tr"
SEED = 1234
DEFAULT_SIZES = "100000,1000000"


def _peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


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
    peaks["open"] = _peak_rss_mb()
    ingested = ingest(env, submission, out, workdir=out / "work" / "ingest")
    stages["ingest"] = time.perf_counter() - mark
    peaks["ingest"] = _peak_rss_mb()
    mark = time.perf_counter()
    scored = score(env, out / PREDICTION_OUTPUT, out, workdir=out / "work" / "score")
    stages["score"] = time.perf_counter() - mark
    peaks["score"] = _peak_rss_mb()
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
    peaks["artifact"] = _peak_rss_mb()
    return {
        "seconds": time.perf_counter() - started,
        "cases": ingested.total_questions,
        "stages": stages,
        "stage_peak_rss_mb": peaks,
        "overall_score": scored.overall_score,
        "artifact_examples": artifact.example_count,
    }


def _child(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.measure == "baseline":
        result = measure_baseline(Path(args.submission), out)
    else:
        result = measure_full(Path(args.bundle), Path(args.submission), out)
    result["peak_rss_mb"] = _peak_rss_mb()
    print(json.dumps(result))
    return 0


def _in_fresh_process(step: str, bundle: Path, submission: Path, out: Path) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--measure",
        step,
        "--bundle",
        str(bundle),
        "--submission",
        str(submission),
        "--out",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{step} measurement failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


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
        baseline = _in_fresh_process("baseline", made.bundle_dir, made.submission_path, target / "baseline")
        full = _in_fresh_process("full", made.bundle_dir, made.submission_path, target / "full")
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
        small, large = results[0], results[-1]
        growth = large["full"]["peak_rss_mb"] / small["full"]["peak_rss_mb"]
        base_growth = large["baseline"]["peak_rss_mb"] / small["baseline"]["peak_rss_mb"]
        print(
            f"peak memory {large['size']:,} / {small['size']:,} cases: full x{growth:.2f}, "
            f"baseline x{base_growth:.2f} (cases x{large['size'] / small['size']:.0f})"
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default=DEFAULT_SIZES, help=f"comma-separated case counts ({DEFAULT_SIZES})"
    )
    parser.add_argument(
        "--workdir", type=Path, help="keep generated data and outputs here (default: a temp dir)"
    )
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--measure", choices=["baseline", "full"], help=argparse.SUPPRESS)
    parser.add_argument("--bundle", help=argparse.SUPPRESS)
    parser.add_argument("--submission", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        return _child(args)
    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        results = run_bench(sizes, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="benchgen-bench-") as tmp:
            results = run_bench(sizes, Path(tmp))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
