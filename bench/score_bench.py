"""Scoring throughput, memory and cold start, against the targets a million-case run must meet.

For each size it generates a GSM8K-style math environment and a submission with the example generator
(fixed seed, about 30% of the answers wrong), then measures, each step in a fresh Python process pinned to
one core (see measure.py), so that one step's memory cannot show up in another's:

- run: what ``benchgen score`` does: open the environment, ingest the submission, score every case
  (verdicts, scores, detailed results), build the finetune artifact; the time and peak RSS of each stage,
  and the bytes of the files the run wrote;
- floor: parse the same inputs (``cases.jsonl`` line by line, the submission whole) and write as many
  bytes as the run wrote, as JSON of the parsed records: the least any pipeline over these inputs does;
- sharded: the same run split into shards, each scored and collected as a part in its own process, then
  merged (see sharded.py), and whether the merged files are the whole run's, byte for byte.

Then each handler's cold-start import as cold_start_bench.py measures it (or as its --json recorded it),
and a table of the targets with PASS or MISS computed from the measurements above.

Rates are cases per CPU second of the pinned process: on a machine shared with other work, wall time also
counts the time the core spent on others. Wall time is printed beside.

    python bench/score_bench.py                      # 100,000 and 1,000,000 cases (many minutes)
    python bench/score_bench.py --sizes 10000 --cold-start-runs 1       # a quick run
    python bench/score_bench.py --json bench.json --cold-start-json cold-start.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from measure import Clock, Step, bench_main, in_fresh_process, peak_rss_mb
from sharded import ENVIRONMENT, RUN_FILES, STEPS, run_info, run_sharded

SEED = 1234
DEFAULT_SIZES = "100000,1000000"
DEFAULT_SHARD_CASES = 100_000
# The targets.
SCORE_ARTIFACT_RATE = 30_000  # cases per second of one core, scoring and artifact together
FLOOR_RATIO = 3.0  # score + artifact time over the floor's
PEAK_RSS_MB = 300.0  # every process, at every size
IMPORT_MS = 250.0  # a handler's import, as deployed


class Stopwatch:
    """Times each step of an offline run (see benchgen.offline), with the process's peak memory after it."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.stages: dict[str, dict[str, float]] = {}

    def _lap(self, stage: str) -> None:
        self.stages[stage] = {**self.clock.lap(), "peak_rss_mb": peak_rss_mb()}

    def opened(self, env: Any) -> None:
        self._lap("open")

    def ingested(self, report: Any) -> None:
        self._lap("ingest")

    def scoring(self, done: int) -> None:
        pass

    def scored(self, report: Any) -> None:
        self._lap("score")

    def built(self, report: Any) -> None:
        self._lap("artifact")


def measure_run(bundle: Path, submission: Path, out: Path) -> dict[str, Any]:
    from benchgen.offline import run_offline

    watch = Stopwatch()
    done = run_offline(bundle, submission, out, workdir=out / "work", run_info=run_info, observer=watch)
    written = sorted(done.files.values())
    return {
        "cases": done.ingested.total_questions,
        "stages": watch.stages,
        "output_bytes": sum(path.stat().st_size for path in written),
        "output_files": {path.name: path.stat().st_size for path in written},
        "overall_score": done.scored.overall_score,
        "artifact_examples": done.artifact.example_count,
    }


def measure_floor(cases: Path, submission: Path, out: Path, *, output_bytes: str) -> dict[str, Any]:
    clock = Clock()
    with cases.open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    with submission.open(encoding="utf-8") as source:
        if submission.suffix == ".jsonl":
            records.extend(json.loads(line) for line in source if line.strip())
        else:
            records.extend(json.load(source)["predictions"])
    parsed = clock.lap()
    written, target = 0, int(output_bytes)
    with (out / "floor.jsonl").open("wb") as sink:
        for record in itertools.cycle(records):
            if written >= target:
                break
            line = json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"
            sink.write(line)
            written += len(line)
    wrote = clock.lap()
    return {
        "seconds": parsed["seconds"] + wrote["seconds"],
        "cpu_seconds": parsed["cpu_seconds"] + wrote["cpu_seconds"],
        "parse": parsed,
        "write": wrote,
        "bytes": written,
    }


def _rate(cases: int, cpu_seconds: float) -> float:
    return cases / cpu_seconds if cpu_seconds > 0 else float("inf")


def measure_size(size: int, root: Path, shard_cases: int) -> dict[str, Any]:
    from benchgen.outputs import RunOutput
    from examplegen import generate_environment
    from examplegen.base import REFERENCE_DIR
    from examplegen.writing import write_bundle_zip

    made = generate_environment(ENVIRONMENT, root / "generated", cases=size, seed=SEED)
    cases = made.bundle_dir / REFERENCE_DIR / "cases.jsonl"
    bundle_zip = write_bundle_zip(made.bundle_dir, root / "bundle.zip")
    inputs = {
        "bundle.zip": bundle_zip.stat().st_size,
        "cases.jsonl": cases.stat().st_size,
        made.submission_path.name: made.submission_path.stat().st_size,
    }
    run = in_fresh_process(__file__, "run", made.bundle_dir, made.submission_path, root / "run")
    floor = in_fresh_process(
        __file__, "floor", cases, made.submission_path, root / "floor", {"output_bytes": run["output_bytes"]}
    )
    sharded = run_sharded(
        __file__,
        made.bundle_dir,
        cases,
        RunOutput.PREDICTION_OUTPUT.path_in(root / "run"),
        root / "run",
        root / "sharded",
        shard_cases,
    )
    return {"size": size, "inputs": inputs, "run": run, "floor": floor, "sharded": sharded}


STEP_HEADER = f"{'step':<20}{'cases':>11}{'cpu s':>9}{'wall s':>9}{'cases/s (cpu)':>15}{'peak RSS MB':>13}"


def _step_row(label: str, cases: int, step: dict[str, Any]) -> str:
    """One measured step: its CPU and wall time, its rate on one core and its process's peak memory."""
    cpu = step["cpu_seconds"]
    return (
        f"{label:<20}{cases:>11,}{cpu:>9.2f}{step['seconds']:>9.2f}{_rate(cases, cpu):>15,.0f}"
        f"{step.get('peak_rss_mb', float('nan')):>13.1f}"
    )


def print_size(result: dict[str, Any]) -> None:
    size, run, floor = result["size"], result["run"], result["floor"]
    print(f"\n{size:,} cases: the run wrote {run['output_bytes']:,} bytes ({', '.join(run['output_files'])})")
    print(f"  {STEP_HEADER}")
    for name, stage in run["stages"].items():
        print(f"  {_step_row(name, size, stage)}")
    score, artifact = run["stages"]["score"], run["stages"]["artifact"]
    both = {key: score[key] + artifact[key] for key in ("cpu_seconds", "seconds")}
    print(f"  {_step_row('score + artifact', size, {**both, 'peak_rss_mb': run['peak_rss_mb']})}")
    print(f"  {_step_row('floor', size, floor)}")
    print(
        f"  floor: parse {floor['parse']['cpu_seconds']:.2f} cpu s, write {floor['bytes']:,} bytes "
        f"{floor['write']['cpu_seconds']:.2f} cpu s; score + artifact / floor: "
        f"x{both['cpu_seconds'] / floor['cpu_seconds']:.1f}"
    )
    print_sharded(size, result["sharded"])


def print_sharded(size: int, sharded: dict[str, Any]) -> None:
    shards = sharded["shards"]
    print(f"  sharded: {len(shards)} shard(s) of up to {sharded['shard_cases']:,} cases, a process per step")
    print(f"    {STEP_HEADER}{'part files':>12}")
    for shard in shards:
        cases = shard["score"]["cases"]
        for kind, part in (("score", "score_part"), ("artifact", "artifact_part")):
            row = _step_row(f"{kind} {shard['shard']}", cases, shard[kind])
            print(f"    {row}{shard[part]['files']:>12}")
    for name in ("finish_scores", "finish_artifact"):
        print(f"    {_step_row(name.replace('_', ' '), size, sharded[name])}")
    total, longest = sharded_cpu(sharded)
    print(
        f"    total, one step after another: {total:.2f} cpu s ({_rate(size, total):,.0f} cases/s); "
        f"the longest shard then the merges (shards in parallel): {longest:.2f} cpu s"
    )
    differ = [name for name, same in sharded["same_bytes"].items() if not same]
    verdict = "NO, they differ: " + ", ".join(differ) if differ else f"yes, all {len(RUN_FILES)}"
    print(f"    merged files byte-identical to the whole run's: {verdict}")


def sharded_cpu(sharded: dict[str, Any]) -> tuple[float, float]:
    """CPU seconds of the sharded path: all steps one after another, and the longest shard then the merges."""
    shard_cpu = [
        shard["score"]["cpu_seconds"] + shard["artifact"]["cpu_seconds"] for shard in sharded["shards"]
    ]
    merges = sharded["finish_scores"]["cpu_seconds"] + sharded["finish_artifact"]["cpu_seconds"]
    return sum(shard_cpu) + merges, max(shard_cpu) + merges


def sharded_peak(sharded: dict[str, Any]) -> float:
    steps = [shard[kind] for shard in sharded["shards"] for kind in ("score", "artifact")]
    steps += [sharded["finish_scores"], sharded["finish_artifact"]]
    return max(float(step["peak_rss_mb"]) for step in steps)


def _verdict(target: str, limit: str, size: int | None, value: float, passed: bool) -> dict[str, Any]:
    return {"target": target, "limit": limit, "size": size, "value": value, "pass": passed}


def verdicts(results: list[dict[str, Any]], imports: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target, its measured value per size (or per handler) and whether that value meets it."""
    rows = []
    for result in results:
        size, run, floor = result["size"], result["run"], result["floor"]
        both = run["stages"]["score"]["cpu_seconds"] + run["stages"]["artifact"]["cpu_seconds"]
        rate, ratio = _rate(size, both), both / floor["cpu_seconds"]
        whole, worst = run["peak_rss_mb"], sharded_peak(result["sharded"])
        rows += [
            _verdict(
                "score + artifact, cases/s of one core",
                f">= {SCORE_ARTIFACT_RATE:,}",
                size,
                rate,
                rate >= SCORE_ARTIFACT_RATE,
            ),
            _verdict("score + artifact / floor", f"<= x{FLOOR_RATIO:g}", size, ratio, ratio <= FLOOR_RATIO),
            _verdict("peak RSS MB, whole run", f"< {PEAK_RSS_MB:g}", size, whole, whole < PEAK_RSS_MB),
            _verdict(
                "peak RSS MB, worst sharded step", f"< {PEAK_RSS_MB:g}", size, worst, worst < PEAK_RSS_MB
            ),
        ]
    for name, function in imports["functions"].items():
        milliseconds = function["no_bytecode_cpu_seconds"] * 1000
        rows.append(
            _verdict(
                f"import ms (cpu), {name}", f"< {IMPORT_MS:g}", None, milliseconds, milliseconds < IMPORT_MS
            )
        )
    return rows


def _cell(row: dict[str, Any]) -> str:
    value = row["value"]
    return f"{value:>12,.{1 if value < 100 else 0}f} {'PASS' if row['pass'] else 'MISS'}"


def print_verdicts(rows: list[dict[str, Any]], sizes: list[int]) -> None:
    print("\ntargets (PASS or MISS from the measurements above)")
    print(f"  {'target':<40}{'limit':>11}" + "".join(f"{size:>17,}" for size in sizes))
    for target in dict.fromkeys(row["target"] for row in rows):
        own = {row["size"]: row for row in rows if row["target"] == target}
        cells = _cell(own[None]) if None in own else "".join(_cell(own[size]) for size in sizes)
        print(f"  {target:<40}{next(iter(own.values()))['limit']:>11}{cells}")


def cold_start(arguments: argparse.Namespace) -> dict[str, Any]:
    """Each handler's import time: read from cold_start_bench's JSON, or measured now (no layer sizes)."""
    from cold_start_bench import import_table, measure_imports

    if arguments.cold_start_json is not None:
        imports: dict[str, Any] = json.loads(arguments.cold_start_json.read_text(encoding="utf-8"))["imports"]
        runs = f"{imports.get('runs', 'several')} (recorded)"
    else:
        with tempfile.TemporaryDirectory(prefix="benchgen-cold-start-") as tmp:
            imports = measure_imports(Path(tmp), arguments.cold_start_runs)
        runs = str(arguments.cold_start_runs)
    print()
    print(import_table(imports, runs))
    return imports


def run_bench(sizes: list[int], root: Path, arguments: argparse.Namespace) -> dict[str, Any]:
    results = []
    for size in sizes:
        result = measure_size(size, root / f"n{size}", arguments.shard_cases)
        print_size(result)
        results.append(result)
    imports = cold_start(arguments)
    rows = verdicts(results, imports)
    print_verdicts(rows, sizes)
    return {"sizes": results, "cold_start": imports, "targets": rows}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shard-cases",
        type=int,
        default=DEFAULT_SHARD_CASES,
        help=f"cases per shard ({DEFAULT_SHARD_CASES:,})",
    )
    parser.add_argument(
        "--cold-start-json", type=Path, help="read handler import times from cold_start_bench's --json"
    )
    parser.add_argument(
        "--cold-start-runs", type=int, default=5, help="fresh processes per handler import (5)"
    )


def main(argv: list[str] | None = None) -> int:
    steps: dict[str, Step] = {"run": measure_run, "floor": measure_floor}
    steps.update(STEPS)
    return bench_main(
        argv,
        description=__doc__,
        default_sizes=DEFAULT_SIZES,
        steps=steps,
        bench=run_bench,
        add_arguments=add_arguments,
    )


if __name__ == "__main__":
    sys.exit(main())
