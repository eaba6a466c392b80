"""One generated math run through the local cloud's state machines, scored in shards.

Generates a ``gsm8k-tr`` environment of ``--cases`` cases and its submission (the example generator, fixed
seed), stands the stack up on moto deployed with ``-c benchgen:shardCases=<--shard-cases>``, uploads both,
and waits until the run's dataset is saved. Every function runs in this process, one shard after another
as moto's Distributed Map starts them, so the figures are one machine's, not Lambda's.

Prints: registration and the run's total time (upload of the submission to the saved dataset), ingest
(the run's start to the ShardedScoring execution's start), each shard's ScoreShard and BuildShardArtifact
seconds (each function's own wall time, timed around its handler), ReduceScores and BuildArtifact
seconds (from the executions' histories), and the process's peak RSS.

    PYTHONPATH=layers:. python bench/cloud_shards_bench.py                    # 1,000,000 cases
    PYTHONPATH=layers:. python bench/cloud_shards_bench.py --cases 100000 --shard-cases 25000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from measure import state_seconds

ENVIRONMENT = "gsm8k-tr"
SEED = 1234
RUN_ID = "bench-run"
# Generous: at a million cases a run takes minutes even on a fast machine.
WAIT_S = 4 * 3600


def _history(sfn: Any, arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"executionArn": arn, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**kwargs)
        events += page["events"]
        if "nextToken" not in page:
            return events
        kwargs["nextToken"] = page["nextToken"]


class _Timed:
    """A function's handler that records each invocation's shard and wall seconds."""

    def __init__(self, folder: str) -> None:
        from localcloud.stack_template import lazy_handler

        self._handler = lazy_handler(folder)
        self.seconds: dict[int, float] = {}

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._handler(event, context)
        finally:
            self.seconds[int(event["shard"])] = time.perf_counter() - started


def run(cases: int, shard_cases: int, root: Path) -> dict[str, Any]:
    from benchgen.aws.tables.runs import RunsRepo
    from benchgen.bucket_layout import execution_name, sharded_execution_name
    from examplegen import generate_environment
    from examplegen.writing import write_bundle_zip
    from infra.sizing import SHARD_CASES
    from infra.synth import synth_stacks
    from localcloud.cloud import LocalCloud

    started = time.perf_counter()
    made = generate_environment(ENVIRONMENT, root / "generated", cases=cases, seed=SEED)
    bundle = write_bundle_zip(made.bundle_dir, root / "bundle.zip")
    generated_s = time.perf_counter() - started
    stacks = synth_stacks({SHARD_CASES: str(shard_cases)})
    score, artifact = _Timed("score_shard"), _Timed("build_shard_artifact")
    with LocalCloud(stacks, handlers={"score_shard": score, "build_shard_artifact": artifact}) as cloud:
        s3 = cloud.client("s3")
        sfn = cloud.client("stepfunctions")
        started = time.perf_counter()
        s3.put_object(
            Bucket=cloud.bucket, Key=f"environments/{ENVIRONMENT}/v1/bundle.zip", Body=bundle.read_bytes()
        )
        cloud.settle(timeout=WAIT_S)
        registered_s = time.perf_counter() - started

        started = time.perf_counter()
        s3.put_object(
            Bucket=cloud.bucket,
            Key=f"submissions/{RUN_ID}/{made.submission_path.name}",
            Body=made.submission_path.read_bytes(),
            Metadata={"environment": ENVIRONMENT, "version": "v1", "model": "bench"},
        )
        finished = cloud.wait_for_execution(execution_name(RUN_ID), timeout=WAIT_S)
        total_s = time.perf_counter() - started
        cloud.settle(timeout=WAIT_S)

        runs = RunsRepo(next(n for lid, n in cloud.table_names.items() if lid.startswith("Runs")))
        record = runs.get(RUN_ID)
        assert record is not None
        sharded_arn = cloud.execution_arn(
            sharded_execution_name(RUN_ID), cloud.state_machine_arns["ShardedScoring"]
        )
        sharded = sfn.describe_execution(executionArn=sharded_arn)
        parent = _history(sfn, sharded_arn)
        (map_run,) = sfn.list_map_runs(executionArn=sharded_arn)["mapRuns"]
        items = sfn.describe_map_run(mapRunArn=map_run["mapRunArn"])["itemCounts"]
        shards = [
            {
                "score_s": score.seconds.get(shard, float("nan")),
                "artifact_s": artifact.seconds.get(shard, float("nan")),
            }
            for shard in range(max([*score.seconds, -1]) + 1)
        ]
        pipeline = _history(sfn, finished["executionArn"])
        ingest_s = (sharded["startDate"] - datetime.fromisoformat(str(record.started_at))).total_seconds()
        return {
            "cases": cases,
            "shard_cases": shard_cases,
            "status": record.status.value,
            "artifact_status": record.artifact_status.value if record.artifact_status else None,
            "failure_reason": record.failure_reason,
            "generated_s": generated_s,
            "registered_s": registered_s,
            "total_s": total_s,
            "ingest_s": ingest_s,
            "sharded_status": sharded["status"],
            "shards": shards,
            "reduce_s": state_seconds(parent, "ReduceScores"),
            "build_artifact_s": state_seconds(pipeline, "BuildArtifact"),
            "map_items": {key: items[key] for key in ("total", "succeeded", "failed")},
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def report(result: dict[str, Any]) -> None:
    cases = result["cases"]
    print(
        f"{cases:,} cases in shards of {result['shard_cases']:,}: run {result['status']}, "
        f"artifact {result['artifact_status']}, sharded execution {result['sharded_status']}"
    )
    if result["failure_reason"]:
        print(f"  failure: {result['failure_reason']}")
    print(
        f"  generated in {result['generated_s']:.1f} s; registered (cases cut into shards) in "
        + f"{result['registered_s']:.1f} s"
    )
    print(
        f"  total {result['total_s']:.1f} s ({cases / result['total_s']:,.0f} cases/s) from the submission's "
        f"upload to the saved dataset; ingest {result['ingest_s']:.1f} s"
    )
    print(f"  Distributed Map items: {result['map_items']}")
    print(f"  {'shard':>5}  {'score s':>8}  {'artifact s':>10}")
    for number, shard in enumerate(result["shards"], start=1):
        print(f"  {number:>5}  {shard['score_s']:>8.1f}  {shard['artifact_s']:>10.1f}")
    print(
        f"  ReduceScores {result['reduce_s']:.1f} s; BuildArtifact (merge) {result['build_artifact_s']:.1f} s"
    )
    print(f"  peak RSS of the process (every function in it) {result['peak_rss_mb']:.0f} MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--shard-cases", type=int, default=100_000)
    parser.add_argument("--workdir", type=Path, help="keep the generated data here")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    args = parser.parse_args(argv)
    # Every function logs and emits metrics to stdout in-process: only the figures are wanted here.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    with tempfile.TemporaryDirectory(prefix="benchgen-cloud-shards-") as tmp:
        result = run(args.cases, args.shard_cases, args.workdir or Path(tmp))
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return 0 if result["artifact_status"] == "Saved" else 1


if __name__ == "__main__":
    sys.exit(main())
