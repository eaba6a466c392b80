"""What a step of the model server's reinforcement (GRPO) job costs on the real model, per setting.

Each setting trains SmolLM2-135M-Instruct (the ``smollm2`` weights) for a few steps with
``modelserver.train.build`` (the job's own trainer) on prompts made from the first ``arithmetic-en`` cases,
as an ``openai-rft`` package holds them (the question and the answer format the package's suffix asks for,
the gold answer under ``grading``), rewarded by a grader: ``--grader FILE`` (a package's ``grader.py``), or
the stdlib one below (1.0 when the number after the answer's last ``####``, or its last number, is the gold
one). It reports, per setting, the wall seconds of every step, rollouts (sampled answers) and their
tokens per second, and the reward of each step, with the load average before and after: the machine may be
shared, so compare settings within one run.

    python bench/grpo_bench.py --steps 3 --json grpo.json
    python bench/grpo_bench.py --settings b4g4l64 b2g8l64 --steps 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from modelserver.jobs import RL_DEFAULTS

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "examples" / "arithmetic-en" / "bundle" / "reference" / "cases.jsonl"
SUFFIX = "Give the final answer after '####'."
GRADER = """
import re

def grade(sample, item):
    text = sample["output_text"]
    tail = text.rsplit("####", 1)[1] if "####" in text else text
    numbers = re.findall(r"-?\\d+(?:\\.\\d+)?", tail.replace(",", ""))
    return 1.0 if numbers and float(numbers[-1]) == float(item["grading"]["answer"]) else 0.0
"""
# Prompts a step (b), answers per prompt (g), most tokens an answer (l).
SETTINGS: dict[str, dict[str, int]] = {
    "b4g4l64": {"batch_size": 4, "num_generations": 4, "max_completion_length": 64},
    "b2g8l64": {"batch_size": 2, "num_generations": 8, "max_completion_length": 64},
    "b4g4l128": {"batch_size": 4, "num_generations": 4, "max_completion_length": 128},
    "b2g4l32": {"batch_size": 2, "num_generations": 4, "max_completion_length": 32},
}


def prompts(path: Path, count: int) -> None:
    with REFERENCE.open(encoding="utf-8") as cases, path.open("w", encoding="utf-8") as out:
        for line, _ in zip(cases, range(count), strict=False):
            case = json.loads(line)
            row = {
                "messages": [{"role": "user", "content": f"{case['question']} {SUFFIX}"}],
                "grading": {"answer": case["answer"], "case_id": case["id"]},
            }
            out.write(json.dumps(row) + "\n")


def run(setting: str, steps: int, base: Path, grader: str, work: Path) -> dict[str, Any]:
    from modelserver.train import PROGRESS, build

    numbers = SETTINGS[setting]
    rows = work / f"{setting}.jsonl"
    prompts(rows, numbers["batch_size"] * steps)
    job = work / setting
    job.mkdir()
    spec = {
        "base_folder": str(base),
        "training_file": str(rows),
        "training_name": rows.name,
        "method": "reinforcement",
        "grader": {"name": "bench", "source": grader},
        "hyperparameters": RL_DEFAULTS | numbers,
        "output": str(job / "checkpoint"),
    }
    seen: list[dict[str, Any]] = []

    from transformers import TrainerCallback

    class Steps(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if (logs or {}).get("loss") is not None:
                seen.append(json.loads((job / PROGRESS).read_text(encoding="utf-8")))

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    trainer = build(job, spec, callbacks=[Steps()], max_steps=steps)
    setup = time.perf_counter() - started
    trainer.train()
    rollouts = numbers["batch_size"] * numbers["num_generations"]
    return {
        "setting": setting,
        **numbers,
        "rollouts_per_step": rollouts,
        "setup_s": round(setup, 1),
        "step_s": [step["step_seconds"] for step in seen],
        "rollouts_per_s": [step["rollouts_per_s"] for step in seen],
        "completion_tokens_per_s": [step["completion_tokens_per_s"] for step in seen],
        "reward": [step["reward"] for step in seen],
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--grader", type=Path, help="a grader.py defining grade(sample, item)")
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args(argv)
    from modelserver.weights import loadable_folder, resolve

    grader = args.grader.read_text(encoding="utf-8") if args.grader else GRADER
    results = []
    with tempfile.TemporaryDirectory(prefix="grpo-bench-") as scratch:
        work = Path(scratch)
        base = loadable_folder(resolve("smollm2"), ROOT / "out" / "model-cache")
        for setting in args.settings:
            results.append(run(setting, args.steps, base, grader, work))
            print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
