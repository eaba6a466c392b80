"""The model server's SFT trainer measured phase by phase on a package's rows, for the recipe the server
ships against the one it replaced, and each trained checkpoint's verdict on the package's held-out cases.

It reads a ``together-sft`` package (``benchgen prepare ... --profile together-sft`` writes one; the real
loop trains on one such): ``train.jsonl`` and ``validation.jsonl`` as the model server receives them, and
the held-out case ids of its manifest. Each recipe runs in its own process:

- **train**: ``modelserver.train.build`` (the job's own trainer) with the recipe's training arguments over
  the server's, one epoch (or ``--max-steps``), every phase timed (wall seconds): collation, forward,
  backward (the loss's backward pass), optimizer step, the rest of each step (loss, gradient clipping, the
  scheduler, logging), the per-epoch evaluation on the validation rows, and saving the checkpoint; loading
  and tokenizing before the epoch ("setup");
- **evaluate** (not with ``--max-steps``): the checkpoint served by ``ModelServer`` and asked every held-out
  case through the openai-compatible client a live run uses (greedy, the server's default length, 16 at a
  time), each answer graded by the ``math`` template's judge, paired with the base model's answers asked
  the same way, by McNemar's exact test, as the loop's comparison does.

Each recipe's per-step losses are kept: a recipe that only reorders the same arithmetic (recomputing
activations or not) must log the same losses as the one it replaces. The table gives each phase's seconds
per recipe and the ratio to the first recipe's, measured in the same run; the machine may be shared, so the
ratios are the result, not the seconds.

    python bench/train_bench.py --package PKG.zip                            # before and shipped, whole epoch
    python bench/train_bench.py --package PKG.zip --recipes before shipped bf16 --max-steps 8 --json t.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cli.self_hosted_model import HYPERPARAMETERS
from modelserver.jobs import DEFAULTS

ROOT = Path(__file__).resolve().parent.parent

REFERENCE = ROOT / "examples" / "arithmetic-en" / "bundle" / "reference" / "cases.jsonl"
# Training arguments each recipe sets over what ``modelserver.train.build`` chooses.
RECIPES: dict[str, dict[str, Any]] = {
    # What the server trained with before: TRL's default of recomputing activations in the backward pass.
    "before": {"activation_checkpointing": True},
    "shipped": {},
    "bf16": {"bf16": True},
    # How the server batched rows before it grouped rows of like length: shuffled, more of each batch padding.
    "shuffled": {"train_sampling_strategy": "random"},
}
PHASES = ("setup", "collation", "forward", "backward", "optimizer", "step_rest", "evaluation", "save")
CONCURRENCY = 16


class Phases:
    """Wall seconds spent in each phase of one training run, summed over its steps."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._forward_started = 0.0
        self._optimizer_started = 0.0
        self.evaluating = False

    def wrap(self, name: Callable[[], str], function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                phase = name()
                self.seconds[phase] += time.perf_counter() - started
                self.calls[phase] += 1

        return timed

    def attach(self, trainer: Any) -> None:
        trainer.data_collator = self.wrap(
            lambda: "evaluation_collation" if self.evaluating else "collation", trainer.data_collator
        )
        trainer.accelerator.backward = self.wrap(lambda: "backward", trainer.accelerator.backward)
        evaluate = trainer.evaluate

        def evaluation(*args: Any, **kwargs: Any) -> Any:
            self.evaluating = True
            try:
                return self.wrap(lambda: "evaluation", evaluate)(*args, **kwargs)
            finally:
                self.evaluating = False

        trainer.evaluate = evaluation
        trainer.model.register_forward_pre_hook(self._forward_begins)
        trainer.model.register_forward_hook(self._forward_ends)

    def _forward_begins(self, *_: Any) -> None:
        self._forward_started = time.perf_counter()

    def _forward_ends(self, *_: Any) -> None:
        if not self.evaluating:
            self.seconds["forward"] += time.perf_counter() - self._forward_started
            self.calls["forward"] += 1

    def callback(self) -> Any:
        from transformers import TrainerCallback

        phases = self

        class OptimizerStep(TrainerCallback):
            def on_pre_optimizer_step(self, *_: Any, **__: Any) -> None:
                phases._optimizer_started = time.perf_counter()

            def on_optimizer_step(self, *_: Any, **__: Any) -> None:
                phases.seconds["optimizer"] += time.perf_counter() - phases._optimizer_started
                phases.calls["optimizer"] += 1

        return OptimizerStep()


def package_inputs(package: Path, base: Path | None, work: Path) -> dict[str, Any]:
    """The package's rows (unpacked into ``work``), its held-out case ids, and the base model's folder."""
    import zipfile

    with zipfile.ZipFile(package) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        if manifest.get("profile", {}).get("id") != "together-sft":
            raise SystemExit(
                f"{package} is not a together-sft package: prepare one with --profile together-sft"
            )
        work.mkdir(parents=True, exist_ok=True)
        for name in ("train.jsonl", "validation.jsonl"):
            (work / name).write_bytes(archive.read(name))
    if base is None:
        from modelserver.weights import loadable_folder, resolve

        base = loadable_folder(resolve("smollm2"), work / "base")
    return {
        "train": str(work / "train.jsonl"),
        "validation": str(work / "validation.jsonl"),
        "held_out": [case["case_id"] for case in manifest["held_out"]["cases"]],
        "base_folder": str(base),
        # As the real loop asks the server to train; the server's defaults for the rest.
        "hyperparameters": DEFAULTS | HYPERPARAMETERS,
    }


def train_recipe(inputs: dict[str, Any], recipe: str, work: Path, max_steps: int | None) -> dict[str, Any]:
    """One epoch (or ``max_steps``) of ``recipe`` on the package's rows, each phase timed; the checkpoint
    goes to ``work``."""
    import torch

    from modelserver.train import build

    spec = {
        "base_folder": inputs["base_folder"],
        "training_file": inputs["train"],
        "training_name": "train.jsonl",
        "validation_file": inputs["validation"],
        "validation_name": "validation.jsonl",
        "hyperparameters": inputs["hyperparameters"],
        "output": str(work / "checkpoint"),
    }
    settings = RECIPES[recipe] | ({"max_steps": max_steps} if max_steps else {})
    phases = Phases()
    started = time.perf_counter()
    trainer = build(work, spec, callbacks=[phases.callback()], **settings)
    phases.attach(trainer)
    phases.seconds["setup"] = time.perf_counter() - started
    started = time.perf_counter()
    trainer.train()
    # A run cut short by max_steps is evaluated at its end as the epoch's end would be; evaluated again here,
    # the evaluation column would count two.
    if not phases.calls["evaluation"]:
        trainer.evaluate()
    epoch_s = time.perf_counter() - started
    started = time.perf_counter()
    trainer.save_model(spec["output"])
    trainer.processing_class.save_pretrained(spec["output"])
    phases.seconds["save"] = time.perf_counter() - started
    inside = ("collation", "forward", "backward", "optimizer", "evaluation")
    phases.seconds["step_rest"] = epoch_s - sum(phases.seconds[p] for p in inside)
    logs = trainer.state.log_history
    steps = [entry for entry in logs if "loss" in entry]
    evaluated = [entry for entry in logs if "eval_loss" in entry]
    return {
        "recipe": recipe,
        "settings": settings,
        "threads": torch.get_num_threads(),
        "cores": len(os.sched_getaffinity(0)),
        "steps": trainer.state.global_step,
        "epoch_s": epoch_s,
        "phases_s": {p: phases.seconds[p] for p in PHASES},
        "calls": dict(phases.calls),
        "tokens": steps[-1].get("num_tokens") if steps else None,
        "losses": [entry["loss"] for entry in steps],
        "eval_loss": evaluated[-1]["eval_loss"] if evaluated else None,
        "checkpoint": spec["output"],
    }


def reference_cases() -> dict[str, Any]:
    """The example environment's cases, by id, as the templates read them."""
    import msgspec

    from benchgen.cases import Case

    with REFERENCE.open("rb") as lines:
        return {case.id: case for case in (msgspec.json.decode(line, type=Case) for line in lines)}


def held_out_answers(folder: str, case_ids: list[str], work: Path) -> dict[str, str]:
    """What the model saved in ``folder`` answers to each case, asked as a live run asks it."""
    import msgspec

    from benchgen.aws.providers.openai_compatible import ChatCompletions
    from benchgen.inference.prompts import prompt_for
    from benchgen.vocabulary import Sampling
    from modelserver.server import ModelServer

    cases = reference_cases()
    questions = [prompt_for(msgspec.to_builtins(cases[case_id])) for case_id in case_ids]
    with ModelServer(folder, work=work, max_batch=CONCURRENCY) as server:
        client = ChatCompletions(server.base_url, server.base_model, Sampling(temperature=0))
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            return dict(
                zip(case_ids, (answer.text for answer in pool.map(client.complete, questions)), strict=True)
            )


def passed(answers: dict[str, str]) -> dict[str, bool]:
    """Each answer graded by the ``math`` template's judge."""
    from benchgen.cases import Prediction
    from benchgen.scoring.math import judge

    cases = reference_cases()
    return {
        case_id: judge(cases[case_id], Prediction(id=case_id, prediction_text=text), ()).passed
        for case_id, text in answers.items()
    }


def verdict(before: dict[str, bool], after: dict[str, bool]) -> dict[str, Any]:
    from benchgen.compare.stats import mcnemar_exact

    fixed = sum(after[c] and not before[c] for c in before)
    broken = sum(before[c] and not after[c] for c in before)
    return {
        "held_out": len(before),
        "accuracy_before": sum(before.values()) / len(before),
        "accuracy_after": sum(after.values()) / len(after),
        "fixed": fixed,
        "broken": broken,
        "mcnemar_p": mcnemar_exact(fixed, broken),
    }


def _fresh(*arguments: str) -> Any:
    """This script run with ``arguments`` in a new process: the JSON it prints last."""
    command = [sys.executable, __file__, *arguments]
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: list[dict[str, Any]]) -> str:
    """Each phase's seconds per recipe, with the ratio to the first recipe's."""
    first = results[0]
    lines = ["| phase | " + " | ".join(r["recipe"] for r in results) + " |", "|---|" + "---:|" * len(results)]
    for phase in (*PHASES, "epoch"):
        cells = []
        for result in results:
            seconds = result["epoch_s"] if phase == "epoch" else result["phases_s"][phase]
            base = first["epoch_s"] if phase == "epoch" else first["phases_s"][phase]
            ratio = f" (x{seconds / base:.2f})" if result is not first and base > 0 else ""
            cells.append(f"{seconds:.1f}{ratio}")
        lines.append(f"| {phase} | " + " | ".join(cells) + " |")
    for result in results:
        same = "same losses as" if result["losses"] == first["losses"] else "losses differ from"
        found = result.get("verdict")
        said = (
            f"held-out accuracy {found['accuracy_before']:.1%} -> {found['accuracy_after']:.1%} "
            f"(fixed {found['fixed']}, broken {found['broken']}, McNemar p = {found['mcnemar_p']:.2g})"
            if found
            else "not evaluated"
        )
        lines.append(
            f"{result['recipe']}: {result['steps']} steps, {result['tokens']} tokens, "
            f"{result['calls'].get('evaluation', 0)} evaluation(s), {same} "
            f"{first['recipe']}, eval loss {result['eval_loss']}, {result['threads']} torch threads on "
            f"{result['cores']} cores; {said}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--package", type=Path, required=True, help="a together-sft package zip")
    parser.add_argument("--base", type=Path, help="the base model's folder (default: the smollm2 shortcut's)")
    parser.add_argument("--recipes", nargs="+", choices=list(RECIPES), default=["before", "shipped"])
    parser.add_argument("--max-steps", type=int, help="train this many steps only, and evaluate none")
    parser.add_argument(
        "--workdir", type=Path, help="where rows and checkpoints go (default: a temporary one)"
    )
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("--recipe", help=argparse.SUPPRESS)  # train this one, in this (fresh) process
    parser.add_argument("--answers", help=argparse.SUPPRESS)  # this model's held-out answers, here
    args = parser.parse_args(argv)
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    work = args.workdir or Path(tempfile.mkdtemp(prefix="train-bench-"))
    inputs = package_inputs(args.package, args.base, work)
    if args.recipe:
        print(json.dumps(train_recipe(inputs, args.recipe, work / args.recipe, args.max_steps)))
        return 0
    if args.answers:
        print(json.dumps(held_out_answers(args.answers, inputs["held_out"], work / "server")))
        return 0
    common = ["--package", str(args.package), "--workdir", str(work)]
    if args.base:
        common += ["--base", str(args.base)]
    evaluating = not args.max_steps
    before = passed(_fresh(*common, "--answers", inputs["base_folder"])) if evaluating else {}
    results = []
    for recipe in args.recipes:
        result = _fresh(
            *common, "--recipe", recipe, *(["--max-steps", str(args.max_steps)] * bool(args.max_steps))
        )
        if evaluating:
            result["verdict"] = verdict(before, passed(_fresh(*common, "--answers", result["checkpoint"])))
        results.append(result)
        print(f"{recipe}: {result['epoch_s']:.1f} s for {result['steps']} steps", flush=True)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
