"""What a live run costs: the model's tokens on demand against batch, and the InferencePipeline on AWS.

For 1,000, 100,000 and 1,000,000 cases at stated tokens per case (input, output) and a model's stated
prices, the tokens cost ``cases x tokens x price``, by ``benchgen.records.prices.run_cost`` (what a run
records). The AWS side of asking the model on demand (Deploy, Plan, InferShard per shard, Assemble) is
computed by the method of ``cost.py``:

- the shards are the ones Plan cuts: ``benchgen.inference.pacing.fanout`` over the deploy-time shard size
  and the run's ``max_in_flight``; an InferShard invocation is billed for its rounds of model calls at
  the stated latency per answer, plus the overhead of one shard measured here;
- each function's memory, and the InferencePipeline's definition (walked for its state transitions, a
  Distributed Map's child executions included), come from the stack as synthesized;
- S3 requests, and each step's handler seconds (Plan's and Assemble's per case, an InferShard's own),
  are measured on the local cloud: live runs against the example model server (answering at once) at
  two sizes, after a warm-up run, what the larger adds being per shard (``cost.per_shard``) or per
  case. Only the pipeline's own objects count (its ``inference/`` files and the inference log): the
  generated submission is then scored like an uploaded one, whose cost ``cost.py`` gives.

Batch inference runs as a provider's job, without InferShard invocations: its AWS side is not counted
here (its pipeline is not this script's), only its tokens. Measured seconds are wall time on this
machine, not scaled to Lambda's vCPU; the InferShard wait on the model dominates them.

    PYTHONPATH=layers:. python bench/live_cost.py --json live-cost.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from cost import PRICES, PRICES_SOURCE, per_shard, s3_requests, stack_facts, transitions
from live_inference_bench import bundle
from run_requests import counting_calls, s3_calls

SIZES = (1_000, 100_000, 1_000_000)
# The stated case: a math word problem and a worked answer, in tokens (input, output).
TOKENS_PER_CASE = (150, 250)
# The stated model: Amazon Nova Lite on Bedrock, us-east-1, as published on aws.amazon.com/bedrock/pricing
# (2026-12-01): $0.00006 per 1,000 input tokens and $0.00024 per 1,000 output tokens on demand, and
# batch inference at half that, $0.00003 and $0.00012.
MODEL = "Amazon Nova Lite (Bedrock, us-east-1)"
MODEL_PRICES = {
    "on_demand": {"input_per_million": 0.06, "output_per_million": 0.24},
    "batch": {"input_per_million": 0.03, "output_per_million": 0.12},
}
# The stated deployment: the connection's limits and the model's seconds per answer.
MAX_IN_FLIGHT = 64
LATENCY_S = 2.0
# Live runs counted at two sizes (Plan cuts them into 25 and 75 shards of 80), after one of 200 cases.
COUNTED_CASES = (2_000, 6_000)
WARM_UP_CASES = 200
FUNCTIONS = {"Deploy": "DeployModel", "Plan": "PlanInference", "InferShard": "InferShard"}
FUNCTIONS["Assemble"] = "AssemblePredictions"


def count_live_runs(sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    """The pipeline's S3 calls and its steps' handler seconds in live runs of ``sizes`` cases, on one local
    cloud after a warm-up run (so no count holds a cold start)."""
    from benchgen.aws.tables.runs import RunsRepo
    from benchgen.bucket_layout import live_execution_name
    from benchgen.outputs import RunOutput
    from benchgen.records.runs import InferenceLimits, LiveModel, RunRecord
    from benchgen.vocabulary import InferenceMode, Sampling
    from localcloud.cloud import LocalCloud
    from localcloud.model_server import BASE_MODEL, ExampleModelServer

    counted: list[dict[str, Any]] = []
    with LocalCloud() as cloud, ExampleModelServer() as models:
        timings: dict[str, list[float]] = {step: [] for step in FUNCTIONS}
        for step, prefix in FUNCTIONS.items():
            name = next(name for lid, name in cloud.functions.items() if lid.startswith(prefix))
            cloud.hook.handlers[name] = _timed(cloud.hook.handlers[name], timings[step])
        runs = RunsRepo(next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs")))
        machine = cloud.state_machine_arns["InferencePipeline"]
        sfn, s3 = cloud.client("stepfunctions"), cloud.client("s3")
        for cases in (WARM_UP_CASES, *sizes):
            s3.put_object(
                Bucket=cloud.bucket, Key=f"environments/live-{cases}/v1/bundle.zip", Body=bundle(cases)
            )
            cloud.settle()
            run_id = f"live-cost-{cases}"
            live = LiveModel(
                connection_id="conn-bench",
                provider="openai-compatible",
                model_id=BASE_MODEL,
                sampling=Sampling(temperature=0, max_tokens=64),
                base_url=models.base_url,
                limits=InferenceLimits(max_in_flight=MAX_IN_FLIGHT),
                inference_mode=InferenceMode.ON_DEMAND,  # what this bench measures, at any size
            )
            record = RunRecord(
                run_id=run_id,
                environment_id=f"live-{cases}",
                environment_version="v1",
                model=BASE_MODEL,
                owner="bench",
                live_model=live,
            )
            assert runs.create(record)
            for spent in timings.values():
                spent.clear()
            with counting_calls() as counts:
                sfn.start_execution(
                    stateMachineArn=machine,
                    name=live_execution_name(run_id),
                    input=json.dumps({"run_id": run_id}),
                )
                execution = cloud.wait_for_execution(live_execution_name(run_id), state_machine_arn=machine)
                cloud.settle()
            if execution["status"] != "SUCCEEDED":
                raise SystemExit(f"the live run of {cases} cases ended {execution['status']}: {execution}")
            log_key = f"runs/{run_id}/{RunOutput.INFERENCE_LOG.file_name}"
            own: Counter[tuple[str, str, str]] = Counter()
            for (service, operation, key), count in counts.items():
                if f"runs/{run_id}/inference/" in key or key == log_key:
                    # One name for every shard's file of a kind, so that two runs' counts line up.
                    shared_key = re.sub(r"-\d{5}\.jsonl$", "-<shard>.jsonl", key.replace(run_id, "<run>"))
                    own[(service, operation, shared_key)] += count
            if cases == WARM_UP_CASES:
                continue
            counted.append(
                {
                    "cases": cases,
                    "shards": len(timings["InferShard"]),
                    "run": s3_calls(own),
                    "log_bytes_per_case": s3.head_object(Bucket=cloud.bucket, Key=log_key)["ContentLength"]
                    / cases,
                    "handler_seconds": {step: sum(spent) for step, spent in timings.items()},
                }
            )
    return counted


def _timed(handler: Any, spent: list[float]) -> Any:
    def timed(event: Any, context: Any) -> Any:
        started = time.monotonic()
        try:
            return handler(event, context)
        finally:
            spent.append(time.monotonic() - started)

    return timed


def function_ids(facts: dict[str, Any]) -> dict[str, str]:
    """The stack's logical id of each pipeline step's function."""
    return {
        step: next(lid for lid in facts["memory_mb"] if lid.startswith(prefix))
        for step, prefix in FUNCTIONS.items()
    }


def token_costs(cases: int) -> dict[str, float]:
    """What ``cases`` cases' tokens cost on demand and in batch."""
    from benchgen.records.prices import AskedMode, ModelPrices, RunCost, run_cost
    from benchgen.vocabulary import InferenceMode

    modes: tuple[AskedMode, ...] = (InferenceMode.ON_DEMAND, InferenceMode.BATCH)
    costs = {}
    for mode in modes:
        cost = run_cost(
            ModelPrices.model_validate(MODEL_PRICES),
            input_tokens=cases * TOKENS_PER_CASE[0],
            output_tokens=cases * TOKENS_PER_CASE[1],
            mode=mode,
        )
        assert isinstance(cost, RunCost)
        costs[mode.value] = cost.total
    return costs


def live_cost(cases: int, counted: list[dict[str, Any]], facts: dict[str, Any]) -> dict[str, Any]:
    """Tokens on demand and in batch, and the on-demand pipeline's AWS side, for ``cases`` cases."""
    from benchgen.inference.pacing import fanout
    from infra.constructs.inference import DEFAULT_SHARD_SIZE

    few, many = counted
    spread = fanout(cases, DEFAULT_SHARD_SIZE, MAX_IN_FLIGHT)
    shards = math.ceil(cases / spread.shard_size)
    rounds = math.ceil(spread.shard_size / spread.per_shard)

    def per_case(step: str) -> float:
        grown = many["handler_seconds"][step] - few["handler_seconds"][step]
        return float(grown) / (int(many["cases"]) - int(few["cases"]))

    # With the model answering at once, an InferShard invocation's seconds are its overhead alone.
    shard_overhead_s = many["handler_seconds"]["InferShard"] / many["shards"]
    seconds = {
        "Deploy": many["handler_seconds"]["Deploy"] + LATENCY_S,
        "Plan": many["handler_seconds"]["Plan"] + per_case("Plan") * (cases - many["cases"]),
        "InferShard": rounds * LATENCY_S + shard_overhead_s,
        "Assemble": many["handler_seconds"]["Assemble"] + per_case("Assemble") * (cases - many["cases"]),
    }
    counts = {"Deploy": 1, "Plan": 1, "InferShard": shards, "Assemble": 1}
    ids = function_ids(facts)
    gb_seconds = sum(
        counts[step] * facts["memory_mb"][ids[step]] / 1024 * max(0.0, seconds[step]) for step in counts
    )
    fixed, each = per_shard(few, many)
    sizes = {"inference_log.jsonl": (few["log_bytes_per_case"] + many["log_bytes_per_case"]) / 2}
    per_run = s3_requests(fixed, sizes, cases)
    per_shard_requests = s3_requests(each, sizes, spread.shard_size)
    s3 = {kind: per_run[kind] + shards * per_shard_requests[kind] for kind in per_run}
    entered = transitions(facts["machines"]["InferencePipeline"], {}, shards)
    invocations = sum(counts.values())
    aws = {
        "lambda": gb_seconds * PRICES["lambda_gb_second_arm64"] + invocations * PRICES["lambda_request"],
        "step_functions": entered * PRICES["state_transition"],
        "s3": s3["put"] * PRICES["s3_put_class"] + s3["get"] * PRICES["s3_get_class"],
    }
    return {
        "cases": cases,
        "shards": shards,
        "in_flight_per_shard": spread.per_shard,
        "shards_at_once": spread.shards,
        "infer_shard_seconds": seconds["InferShard"],
        "lambda_gb_seconds": gb_seconds,
        "lambda_requests": invocations,
        "state_transitions": entered,
        "s3_requests": s3,
        "aws_dollars": {**aws, "total": sum(aws.values())},
        "tokens_dollars": token_costs(cases),
    }


def print_costs(costs: list[dict[str, Any]]) -> None:
    print(f"model: {MODEL}, {json.dumps(MODEL_PRICES)} USD per million tokens")
    print(
        f"per case: {TOKENS_PER_CASE[0]} input and {TOKENS_PER_CASE[1]} output tokens; "
        f"{LATENCY_S} s per answer, max_in_flight {MAX_IN_FLIGHT}"
    )
    print(f"AWS prices: {PRICES_SOURCE}")
    print(
        f"{'cases':>10}{'shards':>8}{'GB-s':>10}{'transitions':>13}{'S3 PUT':>8}{'S3 GET':>8}"
        f"{'$ AWS':>10}{'$ tokens on demand':>20}{'$ tokens batch':>16}{'$ on demand total':>19}"
    )
    for cost in costs:
        aws, tokens = cost["aws_dollars"]["total"], cost["tokens_dollars"]
        print(
            f"{cost['cases']:>10,}{cost['shards']:>8,}{cost['lambda_gb_seconds']:>10,.0f}"
            f"{cost['state_transitions']:>13,}{cost['s3_requests']['put']:>8,}{cost['s3_requests']['get']:>8,}"
            f"{aws:>10.4f}{tokens['on_demand']:>20.2f}{tokens['batch']:>16.2f}"
            f"{aws + tokens['on_demand']:>19.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, help="also write the costs and what was counted here")
    args = parser.parse_args(argv)
    counted = count_live_runs(COUNTED_CASES)
    facts = stack_facts()
    costs = [live_cost(cases, counted, facts) for cases in SIZES]
    print_costs(costs)
    if args.json is not None:
        document = {"counted": counted, "costs": costs}
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
