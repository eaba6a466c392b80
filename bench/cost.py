"""What a run costs on AWS: Lambda GB-seconds, Step Functions state transitions and S3 requests.

Computed from three sources, nothing retyped:

- measured by ``score_bench.py --json``: each step's CPU seconds per case on one core of the bench machine,
  the environment's opening and each handler's import (paid once per invocation), and the bytes per case
  of every file a run reads and writes (the largest size the bench ran);
- measured by ``run_requests.py --json``: every S3 call of one run on the local cloud, by operation and key;
- the stack, synthesized here: each run-step function's memory, and the state machine definitions.

Derived from those: a step's duration on Lambda is its CPU seconds times ``CPU_FACTOR`` (a Lambda arm64
vCPU against the bench machine's core), divided by the share of a vCPU its memory buys (1,769 MB buy one;
the steps run on one thread, so more buys nothing); S3 transfer time is not counted. A transfer over the
8 MiB multipart threshold of boto3's transfer manager (uploads and downloads alike) takes one request per
8 MiB part, plus two to start and complete an upload, at the file's size for that many cases. State
transitions are the states an execution enters on its success path, walked in the synthesized definitions.

    python bench/cost.py --bench bench.json --requests run-requests.json [--json cost.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
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
# A Lambda arm64 vCPU against one core of the bench machine, on this code: taken as equal until measured.
CPU_FACTOR = 1.0
ONE_VCPU_MB = 1769
MULTIPART_BYTES = 8 * 1024 * 1024
S3_PUT_CLASS = {"PutObject", "CopyObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"}
S3_FREE = {"DeleteObject", "DeleteObjects"}
# The success path of the artifact pipeline: an artifact was emitted and saved.
ARTIFACT_PIPELINE = "ArtifactPipeline"
SUCCESS_CHOICES = {"ArtifactEmitted?": "SaveDataset"}


@dataclass(frozen=True)
class Step:
    """One Lambda invocation of a run: its function, and its CPU seconds as a function of the cases."""

    function: str  # the function's logical id in the stack
    fixed_cpu_s: float  # the handler's import and the environment's opening
    cpu_s_per_case: float

    def cpu_seconds(self, cases: int) -> float:
        return self.fixed_cpu_s + self.cpu_s_per_case * cases


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
    from infra.deployed import render
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


def bench_steps(bench: dict[str, Any]) -> tuple[int, list[Step], dict[str, float]]:
    """The run's steps as the bench measured them at its largest size, and the bytes per case of its files."""
    largest = max(bench["sizes"], key=lambda result: result["size"])
    size, stages = largest["size"], largest["run"]["stages"]
    imports = bench["cold_start"]["functions"]

    def step(function: str, name: str, stage: str) -> Step:
        fixed = imports[name]["no_bytecode_cpu_seconds"] + stages["open"]["cpu_seconds"]
        return Step(function, fixed, stages[stage]["cpu_seconds"] / size)

    steps = [
        step("IngestFunction", "ingest", "ingest"),
        step("ScoreFunction", "score", "score"),
        step("BuildArtifactFunction", "build_artifact", "artifact"),
    ]
    files = {**largest["inputs"], **largest["run"]["output_files"]}
    return size, steps, {name: size_bytes / size for name, size_bytes in files.items()}


def s3_requests(calls: list[dict[str, Any]], bytes_per_case: dict[str, float], cases: int) -> dict[str, int]:
    """The counted calls of one run at ``cases`` cases: transfers over 8 MiB split into parts."""
    put = get = 0
    for call in calls:
        operation, count = call["operation"], call["count"]
        name = call["key"].rsplit("/", 1)[-1]
        size = bytes_per_case.get(name, 0.0) * cases
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
    return cpu_seconds * CPU_FACTOR / min(1.0, memory_mb / ONE_VCPU_MB)


def run_cost(
    cases: int,
    steps: list[Step],
    facts: dict[str, Any],
    calls: list[dict[str, Any]],
    bytes_per_case: dict[str, float],
) -> dict[str, Any]:
    invocations = []
    for step in steps:
        memory = facts["memory_mb"][step.function]
        seconds = lambda_seconds(step.cpu_seconds(cases), memory)
        invocations.append(
            {
                "function": step.function,
                "memory_mb": memory,
                "seconds": seconds,
                "gb_seconds": memory / 1024 * seconds,
                "over_timeout": seconds > facts["timeout_s"][step.function],
            }
        )
    entered = transitions(facts["machines"][ARTIFACT_PIPELINE], SUCCESS_CHOICES, 0)
    requests = s3_requests(calls, bytes_per_case, cases)
    gb_seconds = sum(invocation["gb_seconds"] for invocation in invocations)
    dollars = {
        "lambda": gb_seconds * PRICES["lambda_gb_second_arm64"] + len(invocations) * PRICES["lambda_request"],
        "step_functions": entered * PRICES["state_transition"],
        "s3": requests["put"] * PRICES["s3_put_class"] + requests["get"] * PRICES["s3_get_class"],
    }
    return {
        "cases": cases,
        "invocations": invocations,
        "lambda_gb_seconds": gb_seconds,
        "lambda_requests": len(invocations),
        "state_transitions": entered,
        "s3_requests": requests,
        "dollars": {**dollars, "total": sum(dollars.values())},
    }


def print_costs(costs: list[dict[str, Any]], measured_size: int, path: list[str]) -> None:
    print(f"per-case figures measured at {measured_size:,} cases; prices: {PRICES_SOURCE}")
    print(f"artifact pipeline success path ({len(path)} transitions): {' > '.join(path)}")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bench", type=Path, required=True, help="score_bench.py's --json")
    parser.add_argument("--requests", type=Path, required=True, help="run_requests.py's --json")
    parser.add_argument("--json", type=Path, help="also write the costs to this file")
    args = parser.parse_args(argv)
    bench = json.loads(args.bench.read_text(encoding="utf-8"))
    calls = json.loads(args.requests.read_text(encoding="utf-8"))["run"]
    facts = stack_facts()
    measured_size, steps, bytes_per_case = bench_steps(bench)
    costs = [run_cost(cases, steps, facts, calls, bytes_per_case) for cases in SIZES]
    print_costs(costs, measured_size, success_path(facts["machines"][ARTIFACT_PIPELINE], SUCCESS_CHOICES))
    if args.json is not None:
        args.json.write_text(
            json.dumps({"prices": PRICES, "costs": costs}, indent=2) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
