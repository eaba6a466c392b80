"""Live runs against a model of known speed: wall time beside the limit N·L/C, on the local cloud.

For each (N, L, C) of the grid, the example model server (``localcloud/model_server.py``) stands for a
model that answers every request in L seconds and serves C requests at once (it refuses, with a 429, and
counts any request beyond C, and records the most it ever had in flight); a live run of N cases with
``max_in_flight`` C goes through the InferencePipeline on the local cloud (the Distributed Map's
children run concurrently, bounded by the MaxConcurrency Plan derives). No schedule can ask N cases
faster than N·L/C; the bench prints the run's wall time beside that limit, computed in the same run:

- **inference**: the InferencePipeline execution, Deploy to Generated (its reachability call, the plan,
  the shards, the assembly);
- **shards**: the InferShards Map state alone, entered to exited.

The cases are gsm8k-en's 40 questions repeated under new ids (no finetune section), so the server answers
each as it answers the example. Every function runs in this process: the figures are one machine's.

    PYTHONPATH=layers:. python bench/live_inference_bench.py                    # the default grid
    PYTHONPATH=layers:. python bench/live_inference_bench.py --grid 2000:0.2:32 --json live.json
    PYTHONPATH=layers:. python bench/live_inference_bench.py --shard-size 100   # deployed with shards of 100

Every shard costs a child execution, a function invocation and its reads and writes besides its rounds
of model calls, so the shard size Plan cuts (at most the deploy-time size, 100 by default, and at most
20 rounds of calls) sets how much of the run is that overhead.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from measure import state_seconds

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "gsm8k-en" / "bundle"
DEFAULT_GRID = ("2000:0.2:32", "2000:0.1:64", "500:0.2:8", "1000:0.05:16")
# The goal: N = 2,000, L = 200 ms, C = 32 within 1.3 times N·L/C.
GOAL = (2000, 0.2, 32)
GOAL_RATIO = 1.3
WAIT_S = 1800


@dataclass(frozen=True)
class Point:
    cases: int
    latency_s: float
    slots: int

    @property
    def limit_s(self) -> float:
        return self.cases * self.latency_s / self.slots

    @classmethod
    def parse(cls, text: str) -> Point:
        cases, latency, slots = text.split(":")
        return cls(int(cases), float(latency), int(slots))


@dataclass(frozen=True)
class Measured:
    cases: int
    latency_s: float
    slots: int
    limit_s: float
    inference_s: float
    shards_s: float
    status: str
    answered: int
    served: int
    most_in_flight: int
    refused: int

    @property
    def ratio(self) -> float:
        return self.inference_s / self.limit_s


def bundle(cases: int) -> bytes:
    """gsm8k-en with ``cases`` cases (its own, repeated under new ids) and no finetune section."""
    spec = (EXAMPLE / "competition.yaml").read_text(encoding="utf-8")
    spec = spec[: spec.index("\nfinetune:")] + "\n"
    originals = [
        json.loads(line) for line in (EXAMPLE / "reference" / "cases.jsonl").read_text().splitlines()
    ]
    lines = []
    for number in range(cases):
        case = dict(originals[number % len(originals)])
        case["id"] = f"case-{number:06d}"
        lines.append(json.dumps(case, ensure_ascii=False))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("competition.yaml", spec)
        archive.writestr("reference/cases.jsonl", "\n".join(lines) + "\n")
    return buffer.getvalue()


def measure(points: list[Point], shard_size: int | None = None) -> list[Measured]:
    from benchgen.aws.tables.runs import RunsRepo
    from benchgen.records.runs import InferenceLimits, LiveModel, RunRecord
    from benchgen.vocabulary import InferenceMode, Sampling
    from infra.constructs.inference import INFERENCE_SHARD_SIZE
    from localcloud.cloud import LocalCloud
    from localcloud.model_server import BASE_MODEL, ExampleModelServer

    results: list[Measured] = []
    context = {INFERENCE_SHARD_SIZE: shard_size} if shard_size else None
    with LocalCloud(context=context) as cloud:
        runs = RunsRepo(next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs")))
        sfn = cloud.client("stepfunctions")
        machine = cloud.state_machine_arns["InferencePipeline"]
        for size in sorted({point.cases for point in points}):
            cloud.client("s3").put_object(
                Bucket=cloud.bucket, Key=f"environments/bench-{size}/v1/bundle.zip", Body=bundle(size)
            )
        cloud.settle(timeout=WAIT_S)
        for number, point in enumerate(points):
            run_id = f"bench-live-{number}"
            with ExampleModelServer(latency_s=point.latency_s, slots=point.slots) as models:
                live = LiveModel(
                    connection_id="conn-bench",
                    provider="openai-compatible",
                    model_id=BASE_MODEL,
                    sampling=Sampling(temperature=0, max_tokens=64),
                    base_url=models.base_url,
                    limits=InferenceLimits(max_in_flight=point.slots),
                    inference_mode=InferenceMode.ON_DEMAND,  # what this bench measures, at any size
                )
                record = RunRecord(
                    run_id=run_id,
                    environment_id=f"bench-{point.cases}",
                    environment_version="v1",
                    model=BASE_MODEL,
                    owner="bench",
                    live_model=live,
                )
                assert runs.create(record)
                sfn.start_execution(
                    stateMachineArn=machine, name=f"live-{run_id}", input=json.dumps({"run_id": run_id})
                )
                execution = cloud.wait_for_execution(
                    f"live-{run_id}", timeout=WAIT_S, state_machine_arn=machine
                )
                capacity = models.capacity
            cloud.settle(timeout=WAIT_S)
            history: list[dict[str, Any]] = []
            for page in sfn.get_paginator("get_execution_history").paginate(
                executionArn=execution["executionArn"], maxResults=1000
            ):
                history.extend(page["events"])
            finished = runs.get(run_id)
            results.append(
                Measured(
                    cases=point.cases,
                    latency_s=point.latency_s,
                    slots=point.slots,
                    limit_s=point.limit_s,
                    inference_s=(execution["stopDate"] - execution["startDate"]).total_seconds(),
                    shards_s=state_seconds(history, "InferShards"),
                    status=finished.status.value if finished else "missing",
                    answered=finished.inference.answered if finished and finished.inference else 0,
                    served=capacity.served,
                    most_in_flight=capacity.most_in_flight,
                    refused=capacity.refused,
                )
            )
            report_one(results[-1])
    return results


def report_one(result: Measured) -> None:
    print(
        f"N={result.cases:>6,} L={result.latency_s * 1000:>4.0f} ms C={result.slots:>3}: "
        f"limit {result.limit_s:6.1f} s, inference {result.inference_s:6.1f} s (x{result.ratio:.2f}), "
        f"shards {result.shards_s:6.1f} s (x{result.shards_s / result.limit_s:.2f}); run {result.status}, "
        f"{result.answered:,} answered; server: {result.served:,} served, most in flight "
        f"{result.most_in_flight} of {result.slots}, {result.refused} refused",
        flush=True,
    )


def verdict(results: list[Measured]) -> list[str]:
    """What the figures fall short of: the goal's ratio, and the server's capacity at every point."""
    misses = []
    for result in results:
        if result.most_in_flight > result.slots or result.refused:
            misses.append(
                f"N={result.cases} L={result.latency_s} C={result.slots}: the server saw "
                f"{result.most_in_flight} in flight and refused {result.refused}"
            )
        if result.answered != result.cases:
            misses.append(f"N={result.cases}: {result.answered} of {result.cases} cases answered")
        if (result.cases, result.latency_s, result.slots) == GOAL and result.ratio > GOAL_RATIO:
            misses.append(f"the goal point took x{result.ratio:.2f} its limit (at most x{GOAL_RATIO})")
    return misses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--grid", nargs="+", default=list(DEFAULT_GRID), help="points N:L:C (L in seconds)")
    parser.add_argument("--shard-size", type=int, help="deploy with -c benchgen:inferenceShardSize=<this>")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    started = time.monotonic()
    results = measure([Point.parse(text) for text in args.grid], args.shard_size)
    print(f"\nshards of {args.shard_size or 'the default'} cases")
    print("\n| N | L ms | C | N·L/C s | inference s | ratio | shards s | most in flight | refused |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r.cases:,} | {r.latency_s * 1000:.0f} | {r.slots} | {r.limit_s:.1f} | {r.inference_s:.1f} | "
            f"x{r.ratio:.2f} | {r.shards_s:.1f} | {r.most_in_flight} | {r.refused} |"
        )
    misses = verdict(results)
    print(
        f"\n{len(results)} points in {time.monotonic() - started:.0f} s; " + ("; ".join(misses) or "all PASS")
    )
    if args.json:
        rows = [{**asdict(r), "ratio": r.ratio} for r in results]
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
