"""What a step of the model server's reinforcement (GRPO) job costs on the real model, per setting.

Each setting trains SmolLM2-135M-Instruct (the ``smollm2`` weights) for a few steps with
``modelserver.train.build`` (the job's own trainer) on prompts made from the first ``arithmetic-en`` cases,
as an ``openai-rft`` package holds them (the question and the answer format the package's suffix asks for,
the gold answer under ``grading``), rewarded by a grader: ``--grader FILE`` (a package's ``grader.py``), or
the stdlib one below (1.0 when the number after the answer's last ``####``, or its last number, is the gold
one). It reports, per setting, the wall seconds of every step and where they went (converting the policy
for CTranslate2, generating the answers, the loss's forward pass, its backward pass and the optimizer,
the rest: rewards and bookkeeping), rollouts (sampled answers) and their tokens per second, and the reward
of each step, with the load average before and after: the machine may be shared, so compare settings
within one run. ``--engine transformers`` has TRL's transformers generate sample instead of CTranslate2.

``--compare N`` answers the first N prompts greedily with both engines from the same base model and
reports the share of identical answers and each engine's tokens per second. ``--base-reward`` samples the
base model's answers (CTranslate2, as a job's first step does) under each of ``--temperatures`` and
reports the mean reward and the share of prompts whose answers got different rewards (the groups GRPO
learns from).

    python bench/grpo_bench.py --steps 3 --json grpo.json
    python bench/grpo_bench.py --settings b4g4l64 b2g8l64 --steps 2
    python bench/grpo_bench.py --settings b2g8l128 --compare 8 --base-reward --temperatures 1.0 0.7 --steps 0
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
from modelserver.rollouts import cut_at_end

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
    "b2g4l128": {"batch_size": 2, "num_generations": 4, "max_completion_length": 128},
    "b2g8l128": {"batch_size": 2, "num_generations": 8, "max_completion_length": 128},
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


def run(setting: str, steps: int, base: Path, grader: str, work: Path, engine: str) -> dict[str, Any]:
    from modelserver.train import PROGRESS, build

    numbers = SETTINGS[setting]
    rows = work / f"{setting}.jsonl"
    prompts(rows, numbers["batch_size"] * steps)
    job = work / f"{setting}-{engine}"
    job.mkdir()
    spec = {
        "base_folder": str(base),
        "training_file": str(rows),
        "training_name": rows.name,
        "method": "reinforcement",
        "grader": {"name": "bench", "source": grader},
        "hyperparameters": RL_DEFAULTS | numbers,
        "engine": engine,
        "output": str(job / "checkpoint"),
    }
    seen: list[dict[str, Any]] = []
    passes = {"forward": 0.0, "backward": 0.0, "transformers_generation": 0.0}
    split: list[dict[str, float]] = []

    from transformers import TrainerCallback

    class Steps(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if (logs or {}).get("loss") is not None:
                seen.append(json.loads((job / PROGRESS).read_text(encoding="utf-8")))
                split.append({f"{name}_s": round(seconds, 1) for name, seconds in passes.items()})
                passes.update(dict.fromkeys(passes, 0.0))

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    trainer = build(job, spec, callbacks=[Steps()], max_steps=steps)
    setup = time.perf_counter() - started
    # The loss's forward pass (TRL's compute_loss) and its backward pass, timed where the trainer calls them.
    trainer.compute_loss = _timed(trainer.compute_loss, passes, "forward")
    trainer.accelerator.backward = _timed(trainer.accelerator.backward, passes, "backward")
    trainer._generate_single_turn = _timed(trainer._generate_single_turn, passes, "transformers_generation")
    trainer.train()
    rollouts = numbers["batch_size"] * numbers["num_generations"]
    return {
        "setting": setting,
        "engine": json.loads((job / PROGRESS).read_text(encoding="utf-8"))["rollouts"]["engine"],
        **numbers,
        "rollouts_per_step": rollouts,
        "setup_s": round(setup, 1),
        "step_s": [step["step_seconds"] for step in seen],
        "split_s": [
            {
                "conversion_s": step.get("conversion_seconds", 0.0),
                "generation_s": step.get("generation_seconds"),
                **passes_of_step,
                "rest_s": round(
                    step["step_seconds"]
                    - step.get("conversion_seconds", 0.0)
                    - (step.get("generation_seconds") or 0.0)
                    - sum(passes_of_step.values()),
                    1,
                ),
            }
            for step, passes_of_step in zip(seen, split, strict=True)
        ],
        "rollouts_per_s": [step["rollouts_per_s"] for step in seen],
        # Answer tokens a second of generating them (CTranslate2's generate, or TRL's transformers generate).
        "generation_tokens_per_s": [
            round(rollouts * step["completion_mean_tokens"] / generating, 1)
            for step, passes_of_step in zip(seen, split, strict=True)
            if (generating := step.get("generation_seconds") or passes_of_step["transformers_generation_s"])
        ],
        "completion_tokens_per_s": [step["completion_tokens_per_s"] for step in seen],
        "reward": [step["reward"] for step in seen],
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def _timed(call: Any, into: dict[str, float], name: str) -> Any:
    """``call``, adding the seconds each call of it takes to ``into[name]``."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            into[name] += time.perf_counter() - started

    return timed


def _base(base: Path, work: Path, numbers: dict[str, int], temperature: float) -> tuple[Any, Any, Any]:
    """The base model, its tokenizer and its CTranslate2 rollouts at ``temperature``."""
    from transformers import AutoModelForCausalLM

    from modelserver.engines import CTranslate2Engine
    from modelserver.rollouts import PolicyRollouts
    from modelserver.weights import load_tokenizer

    tokenizer = load_tokenizer(base)
    model = AutoModelForCausalLM.from_pretrained(base, local_files_only=True, dtype="auto")
    engine = CTranslate2Engine(work, "bench", fallback=None)
    rollouts = PolicyRollouts(
        engine,
        model,
        base,
        work,
        temperature=temperature,
        max_new_tokens=numbers["max_completion_length"],
        seed=42,
    )
    return model, tokenizer, rollouts


def _prompt_ids(tokenizer: Any, rows: list[dict[str, Any]]) -> list[list[int]]:
    return [
        list(
            tokenizer.apply_chat_template(
                row["prompt"], add_generation_prompt=True, tokenize=True, return_dict=True
            )["input_ids"]
        )
        for row in rows
    ]


def compare(setting: str, count: int, base: Path, work: Path) -> dict[str, Any]:
    """The first ``count`` prompts answered greedily by CTranslate2 (converted from the loaded model, as a
    job's rollouts are) and by transformers' generate: identical answers, and each one's tokens a second."""
    from modelserver.engines import Decoding, Sampling, TransformersModel
    from modelserver.rows import REINFORCEMENT, read_rows

    numbers = SETTINGS[setting]
    path = work / f"compare-{setting}.jsonl"
    prompts(path, count)
    model, tokenizer, rollouts = _base(base, work, numbers, temperature=0.0)
    ids = _prompt_ids(tokenizer, read_rows(path, path.name, REINFORCEMENT))
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    fast = rollouts.generate(ids)
    fast_s = time.perf_counter() - started
    reference = TransformersModel(model, tokenizer, rollouts.model.ends)
    decoding = Decoding(numbers["max_completion_length"], Sampling(), stopped=lambda _row: False)
    started = time.perf_counter()
    slow = [cut_at_end(answer, rollouts.model.ends) for answer in reference.generate(ids, decoding)]
    slow_s = time.perf_counter() - started
    return {
        "compare": setting,
        "prompts": count,
        "identical_greedy_answers": sum(a == b for a, b in zip(fast, slow, strict=True)),
        "ctranslate2_tokens_per_s": round(sum(map(len, fast)) / fast_s, 1),
        "transformers_tokens_per_s": round(sum(map(len, slow)) / slow_s, 1),
        "conversion_s": round(rollouts.first_conversion_s, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def base_reward(
    setting: str, count: int, base: Path, grader: str, work: Path, temperature: float
) -> dict[str, Any]:
    """The base model's answers to the first ``count`` prompts, ``num_generations`` each, sampled at
    ``temperature`` and graded: the mean reward, and how many prompts' answers got different rewards."""
    from modelserver.grader import reward
    from modelserver.rows import REINFORCEMENT, read_rows

    numbers = SETTINGS[setting]
    generations = numbers["num_generations"]
    path = work / f"reward-{setting}.jsonl"
    prompts(path, count)
    rows = read_rows(path, path.name, REINFORCEMENT)
    _, tokenizer, rollouts = _base(base, work, numbers, temperature=temperature)
    repeated = [row for row in rows for _ in range(generations)]
    started = time.perf_counter()
    answers = rollouts.generate(_prompt_ids(tokenizer, repeated))
    seconds = time.perf_counter() - started
    texts = tokenizer.batch_decode(answers, skip_special_tokens=True)
    scores = reward({"name": "bench", "source": grader})(texts, [row["item"] for row in repeated])
    groups = [scores[start : start + generations] for start in range(0, len(scores), generations)]
    return {
        "base_reward": setting,
        "temperature": temperature,
        "prompts": count,
        "mean_reward": round(sum(s or 0.0 for s in scores) / len(scores), 3),
        "prompts_with_mixed_rewards": sum(len(set(group)) > 1 for group in groups),
        "clipped": sum(len(answer) >= numbers["max_completion_length"] for answer in answers),
        "generation_s": round(seconds, 1),
        "tokens_per_s": round(sum(map(len, answers)) / seconds, 1),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--steps", type=int, default=3, help="training steps a setting (0: none)")
    parser.add_argument("--engine", choices=["ctranslate2", "transformers"], default="ctranslate2")
    parser.add_argument("--compare", type=int, default=0, help="prompts to answer greedily with both engines")
    parser.add_argument("--base-reward", action="store_true", help="grade the base model's sampled answers")
    parser.add_argument("--temperatures", type=float, nargs="+", default=[1.0])
    parser.add_argument("--prompts", type=int, default=8, help="prompts graded with --base-reward")
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
            if args.compare:
                results.append(compare(setting, args.compare, base, work))
                print(json.dumps(results[-1]), flush=True)
            for temperature in args.temperatures if args.base_reward else []:
                results.append(base_reward(setting, args.prompts, base, grader, work, temperature))
                print(json.dumps(results[-1]), flush=True)
            if args.steps:
                results.append(run(setting, args.steps, base, grader, work, args.engine))
                print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
