"""What a run costs on AWS: Lambda GB-seconds, Step Functions state transitions and S3 requests.

Computed from three sources, nothing retyped:

- measured by ``score_bench.py --json``: each step's CPU seconds per case on one core of the bench machine,
  the environment's opening and each handler's import (paid once per invocation), and the bytes per case
  of every file a run reads and writes (the largest size the bench ran);
- measured by ``run_requests.py --json``: every S3 call of one run on the local cloud, by operation and key;
- the stack, synthesized here: each run-step function's memory, and the state machine definitions.

Derived from those: a step's duration on Lambda is its CPU seconds times ``LAMBDA_CPU_FACTOR`` (a Lambda
arm64 vCPU against the bench machine's core, from infra/sizing.py), divided by the share of a vCPU its
memory buys (1,769 MB buy one; the steps run on one thread, so more buys nothing); S3 transfer time is
not counted. A transfer over the 8 MiB multipart threshold of boto3's transfer manager (uploads and
downloads alike) takes one request per 8 MiB part, plus two to start and complete an upload, at the
file's size for that many cases (a part file of a shard, whose size the bench does not record, as one).
A sharded run's S3 requests are those of the same run counted in two numbers of shards: what one more
shard adds is per shard, the rest per run. State transitions are the states an execution enters on its
success path, walked in the synthesized definitions, with a Distributed Map's child executions.
A live run's tokens (on demand against batch) and its InferencePipeline are ``live_cost.py``'s, by the
same method.

    python bench/run_requests.py --json whole.json
    python bench/run_requests.py --shard-cases 1000 --json shards-2.json
    python bench/run_requests.py --shard-cases 500 --json shards-4.json
    python bench/cost.py --bench bench.json --requests whole.json \\
        --sharded-requests shards-2.json shards-4.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# List prices, us-east-1, as published on aws.amazon.com/lambda/pricing/, /step-functions/pricing/ and
# /s3/pricing/ (S3 Standard) when this was written, 2026-12-01.
PRICES = {
    "lambda_gb_second_arm64": 0.0000133334,
    "lambda_request": 0.20 / 1_000_000,
    "state_transition": 0.025 / 1_000,
    "s3_put_class": 0.005 / 1_000,  # PUT, COPY, POST, LIST
    "s3_get_class": 0.0004 / 1_000,  # GET and every other request but DELETE
}
PRICES_SOURCE = (
    "AWS list prices for us-east-1 (aws.amazon.com/lambda/pricing, /step-functions/pricing, /s3/pricing), "
    "as published on 2026-12-01"
)
SIZES = (10_000, 1_000_000, 10_000_000)
MULTIPART_BYTES = 8 * 1024 * 1024
S3_PUT_CLASS = {"PutObject", "CopyObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"}
S3_FREE = {"DeleteObject", "DeleteObjects"}
# The success path of the artifact pipeline: an artifact was emitted and saved.
ARTIFACT_PIPELINE = "ArtifactPipeline"
SHARDED_SCORING = "ShardedScoring"
SUCCESS_CHOICES = {"DatasetSaved?": "EmitDatasetSaved"}


@dataclass(frozen=True)
class Invocations:
    """Like invocations of one function in a run: how many, and each one's cases and CPU seconds."""

    function: str  # the function's logical id in the stack
    count: int
    cases: int  # each invocation's cases
    fixed_cpu_s: float  # the handler's import and the environment's opening
    cpu_s_per_case: float

    def cpu_seconds(self) -> float:
        return self.fixed_cpu_s + self.cpu_s_per_case * self.cases


@dataclass(frozen=True)
class Figures:
    """The bench's figures at its largest size: CPU seconds per case of each step and each handler's import
    (CPU), the CPU seconds of opening the environment, and the bytes per case of the run's files."""

    size: int
    per_case: dict[str, float]
    imports: dict[str, float]
    open_cpu_s: float
    bytes_per_case: dict[str, float]

    def invocations(
        self, function: str, handler: str, step: str | None, count: int, cases: int
    ) -> Invocations:
        per_case = self.per_case[step] if step is not None else 0.0
        return Invocations(function, count, cases, self.imports[handler] + self.open_cpu_s, per_case)


def success_path(definition: dict[str, Any], choices: dict[str, str]) -> list[str]:
    """The states an execution enters from StartAt to its end when every task succeeds; at a Choice state
    it takes the branch ``choices`` names (which must be one of that state's)."""
    path: list[str] = []
    name: str | None = definition["StartAt"]
    while name is not None:
        state = definition["States"][name]
        path.append(name)
        if state["Type"] == "Choice":
            targets = [choice["Next"] for choice in state.get("Choices", [])] + [state.get("Default")]
            if choices.get(name) not in targets:
                raise SystemExit(f"no success branch given for the Choice state {name!r} (one of {targets})")
            name = choices[name]
        elif state["Type"] in ("Succeed", "Fail") or state.get("End"):
            name = None
        else:
            name = state["Next"]
    return path


def transitions(definition: dict[str, Any], choices: dict[str, str], items: int) -> int:
    """State transitions of one successful execution whose Distributed Map states each get ``items`` items:
    one per state entered, and for a Distributed Map one per child execution it starts (to start it) plus
    the states that child enters (the child executions are Standard workflows)."""
    count = 0
    for name in success_path(definition, choices):
        count += 1
        state = definition["States"][name]
        processor = state.get("ItemProcessor", {})
        if state["Type"] == "Map" and processor.get("ProcessorConfig", {}).get("Mode") == "DISTRIBUTED":
            count += items * (1 + len(success_path(processor, choices)))
    return count


def stack_facts() -> dict[str, Any]:
    """Each function's memory and the state machines' definitions, from the synthesized template."""
    from infra.references import render
    from infra.synth import synth_template

    resources = synth_template()["Resources"]
    functions = {
        logical_id: resource["Properties"]
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Function" and "MemorySize" in resource["Properties"]
    }
    machines = {
        logical_id: json.loads(render(resource["Properties"]["DefinitionString"]))
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    }
    return {
        "memory_mb": {
            logical_id: int(properties["MemorySize"]) for logical_id, properties in functions.items()
        },
        "timeout_s": {logical_id: int(properties["Timeout"]) for logical_id, properties in functions.items()},
        "machines": machines,
    }


def bench_figures(bench: dict[str, Any], cold_start: dict[str, Any]) -> Figures:
    largest = max(bench["sizes"], key=lambda result: result["size"])
    size, stages, sharded = largest["size"], largest["run"]["stages"], largest["sharded"]
    shard_cases = sum(shard["score"]["cases"] for shard in sharded["shards"])
    per_case = {stage: stages[stage]["cpu_seconds"] / size for stage in ("ingest", "score", "artifact")}
    for kind in ("score", "artifact"):
        per_case[f"{kind}_part"] = (
            sum(shard[kind]["cpu_seconds"] for shard in sharded["shards"]) / shard_cases
        )
    for name in ("finish_scores", "finish_artifact"):
        per_case[name] = sharded[name]["cpu_seconds"] / size
    files = {**largest["inputs"], **largest["run"]["output_files"]}
    return Figures(
        size=size,
        per_case=per_case,
        imports={name: f["no_bytecode_cpu_seconds"] for name, f in cold_start["functions"].items()},
        open_cpu_s=stages["open"]["cpu_seconds"],
        bytes_per_case={name: size_bytes / size for name, size_bytes in files.items()},
    )


def plan(cases: int, shard_cases: int, figures: Figures) -> list[Invocations]:
    """A run's Lambda invocations: whole up to one shard's cases, else in shards (see infra/sizing.py)."""
    if cases <= shard_cases:
        return [
            figures.invocations("IngestFunction", "ingest", "ingest", 1, cases),
            figures.invocations("ScoreFunction", "score", "score", 1, cases),
            figures.invocations("BuildArtifactFunction", "build_artifact", "artifact", 1, cases),
        ]
    shards = math.ceil(cases / shard_cases)
    return [
        figures.invocations("IngestFunction", "ingest", "ingest", 1, cases),
        # The score function only hands a sharded run to the ShardedScoring state machine.
        figures.invocations("ScoreFunction", "score", None, 1, 0),
        figures.invocations("ScoreShardFunction", "score_shard", "score_part", shards, cases // shards),
        figures.invocations(
            "BuildShardArtifactFunction", "build_shard_artifact", "artifact_part", shards, cases // shards
        ),
        figures.invocations("ReduceScoresFunction", "reduce_scores", "finish_scores", 1, cases),
        figures.invocations("BuildArtifactFunction", "build_artifact", "finish_artifact", 1, cases),
    ]


def file_of(key: str) -> str:
    """The run file an object holds (for its size per case): a shard's cases are ``cases.jsonl`` lines, a
    shard's prediction output is a ``prediction_output.zip``; any other object is named by its key's last
    part, a shard's number in it replaced by ``<shard>``."""
    from benchgen.bucket_layout import CASE_SHARDS, RUN_SHARDS
    from benchgen.outputs import RunOutput

    name = key.rsplit("/", 1)[-1]
    if key.startswith(CASE_SHARDS):
        return "cases.jsonl"
    if f"/{RUN_SHARDS}" in key and name.endswith(".zip"):
        return RunOutput.PREDICTION_OUTPUT.file_name
    # A shard's own objects are named by its number: one name for all shards' objects of a kind.
    return re.sub(r"^\d{5}(?=\.)", "<shard>", name)


def per_shard(few: dict[str, Any], many: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The calls of a sharded run that do not depend on its shard count, and those of each shard, from two
    counts of the same run cut into a different number of shards."""

    def by_file(counted: dict[str, Any]) -> Counter[tuple[str, str]]:
        calls: Counter[tuple[str, str]] = Counter()
        for call in counted["run"]:
            calls[(call["operation"], file_of(call["key"]))] += call["count"]
        return calls

    extra = many["shards"] - few["shards"]
    small, large = by_file(few), by_file(many)
    fixed, each = [], []
    for operation, name in sorted(set(small) | set(large)):
        added, rest = divmod(large[(operation, name)] - small[(operation, name)], extra)
        if rest:
            raise SystemExit(f"{operation} {name}: {rest} calls are neither per run nor per shard")
        each.append({"operation": operation, "key": name, "count": added})
        fixed.append(
            {"operation": operation, "key": name, "count": small[(operation, name)] - few["shards"] * added}
        )
    return fixed, each


def s3_requests(calls: list[dict[str, Any]], bytes_per_case: dict[str, float], cases: int) -> dict[str, int]:
    """The counted calls of one run at ``cases`` cases: transfers over 8 MiB split into parts."""
    put = get = 0
    for call in calls:
        operation, count = call["operation"], call["count"]
        size = bytes_per_case.get(file_of(call["key"]), 0.0) * cases
        parts = max(1, math.ceil(size / MULTIPART_BYTES))
        if operation in S3_FREE:
            continue
        if operation == "PutObject":
            put += count * (parts + 2 if parts > 1 else 1)
        elif operation in S3_PUT_CLASS or operation.startswith("List"):
            put += count
        elif operation == "GetObject":
            get += count * parts
        else:
            get += count
    return {"put": put, "get": get}


def lambda_seconds(cpu_seconds: float, memory_mb: int) -> float:
    """How long CPU seconds of the bench machine's core take on Lambda at ``memory_mb``: the sizing's
    factor between the two, and a share of a vCPU below the memory that buys a whole one."""
    from infra.sizing import LAMBDA_CPU_FACTOR, ONE_VCPU_MB

    return cpu_seconds * LAMBDA_CPU_FACTOR / min(1.0, memory_mb / ONE_VCPU_MB)


def run_cost(
    cases: int, shard_cases: int, figures: Figures, facts: dict[str, Any], requests: dict[str, Any]
) -> dict[str, Any]:
    invocations = []
    for planned in plan(cases, shard_cases, figures):
        memory = facts["memory_mb"][planned.function]
        seconds = lambda_seconds(planned.cpu_seconds(), memory)
        invocations.append(
            {
                "function": planned.function,
                "count": planned.count,
                "memory_mb": memory,
                "seconds_each": seconds,
                "gb_seconds": planned.count * memory / 1024 * seconds,
                "over_timeout": seconds > facts["timeout_s"][planned.function],
            }
        )
    artifact = transitions(facts["machines"][ARTIFACT_PIPELINE], SUCCESS_CHOICES, 0)
    if cases <= shard_cases:
        entered = artifact
        s3 = s3_requests(requests["whole"], figures.bytes_per_case, cases)
    else:
        shards = math.ceil(cases / shard_cases)
        entered = artifact + transitions(facts["machines"][SHARDED_SCORING], SUCCESS_CHOICES, shards)
        fixed = s3_requests(requests["sharded_fixed"], figures.bytes_per_case, cases)
        each = s3_requests(requests["per_shard"], figures.bytes_per_case, cases // shards)
        s3 = {kind: fixed[kind] + shards * each[kind] for kind in fixed}
    gb_seconds = sum(invocation["gb_seconds"] for invocation in invocations)
    requests_count = sum(invocation["count"] for invocation in invocations)
    dollars = {
        "lambda": gb_seconds * PRICES["lambda_gb_second_arm64"] + requests_count * PRICES["lambda_request"],
        "step_functions": entered * PRICES["state_transition"],
        "s3": s3["put"] * PRICES["s3_put_class"] + s3["get"] * PRICES["s3_get_class"],
    }
    return {
        "cases": cases,
        "invocations": invocations,
        "lambda_gb_seconds": gb_seconds,
        "lambda_requests": requests_count,
        "state_transitions": entered,
        "s3_requests": s3,
        "dollars": {**dollars, "total": sum(dollars.values())},
    }


def print_costs(costs: list[dict[str, Any]], figures: Figures, shard_cases: int) -> None:
    print(f"per-case figures measured at {figures.size:,} cases; runs above {shard_cases:,} cases in shards")
    print(f"prices: {PRICES_SOURCE}")
    header = (
        f"{'cases':>12}{'Lambda GB-s':>13}{'invocations':>13}{'transitions':>13}{'S3 PUT':>9}{'S3 GET':>9}"
    )
    print(f"{header}{'$ total':>11}{'$ per 1k cases':>16}  beyond its function's timeout")
    for cost in costs:
        cases, dollars = cost["cases"], cost["dollars"]["total"]
        over = [invocation["function"] for invocation in cost["invocations"] if invocation["over_timeout"]]
        print(
            f"{cases:>12,}{cost['lambda_gb_seconds']:>13,.1f}{cost['lambda_requests']:>13}"
            f"{cost['state_transitions']:>13}{cost['s3_requests']['put']:>9}{cost['s3_requests']['get']:>9}"
            f"{dollars:>11.4f}{dollars / cases * 1000:>16.6f}  {', '.join(over) or '-'}"
        )
    for cost in costs:
        steps = ", ".join(
            f"{invocation['function'].removesuffix('Function')} {invocation['count']} x "
            f"{invocation['seconds_each']:.1f} s at {invocation['memory_mb']} MB"
            for invocation in cost["invocations"]
        )
        print(f"  {cost['cases']:,} cases: {steps}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bench", type=Path, required=True, help="score_bench.py's --json")
    parser.add_argument("--cold-start", type=Path, help="cold_start_bench.py's --json (default: the bench's)")
    parser.add_argument("--requests", type=Path, required=True, help="run_requests.py's --json, a whole run")
    parser.add_argument(
        "--sharded-requests",
        type=Path,
        nargs=2,
        required=True,
        metavar=("FEW", "MORE"),
        help="run_requests.py's --json for the same run in two different numbers of shards",
    )
    parser.add_argument("--json", type=Path, help="also write the costs to this file")
    args = parser.parse_args(argv)
    from infra.sizing import DEFAULT_SHARD_CASES

    def read(path: Path) -> Any:
        return json.loads(path.read_text(encoding="utf-8"))

    bench = read(args.bench)
    cold_start = read(args.cold_start)["imports"] if args.cold_start else bench["cold_start"]
    figures = bench_figures(bench, cold_start)
    fixed, each = per_shard(*(read(path) for path in args.sharded_requests))
    requests = {"whole": read(args.requests)["run"], "sharded_fixed": fixed, "per_shard": each}
    facts = stack_facts()
    costs = [run_cost(cases, DEFAULT_SHARD_CASES, figures, facts, requests) for cases in SIZES]
    print_costs(costs, figures, DEFAULT_SHARD_CASES)
    if args.json is not None:
        document = {"prices": PRICES, "figures": figures.__dict__, "costs": costs}
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
