"""`benchgen demo`: its arguments, and which demo they ask for (one run, with ``--loop`` the whole loop on
the simulated models, with ``--loop --real`` the loop with a real model).

The loop builds on the single-run demo's steps, so the choice between them lives here, above both.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.demo import EXAMPLES, run_demo
from cli.loop import run_loop
from cli.self_hosted_model import GRPO_HYPERPARAMETERS, REAL_EXAMPLE, SelfHostedModel
from cli.simulated_models import SimulatedModels

DEFAULT_EXAMPLE = "gsm8k-tr"


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="run the whole pipeline on the local cloud with an example environment",
        description="Start the local cloud in-process, register an example environment, upload a "
        "submission, follow the run through ingest, score and the state machine, prepare training material "
        "from the run, build an exact package of it, and write their files.",
    )
    demo.add_argument(
        "--out",
        type=Path,
        help="where to write the run's files (default out/demo, out/demo-loop with --loop, "
        "out/demo-real with --loop --real)",
    )
    demo.add_argument(
        "--example",
        help="example environment under examples/ (default gsm8k-tr, arithmetic-en with --real)",
    )
    demo.add_argument("--model", default="Qwen2.5-7B-LoRA", help="the model name recorded on the run")
    demo.add_argument(
        "--loop",
        action="store_true",
        help="the whole loop instead: a live run of a simulated example model, its dataset, a package, a "
        "training run on moto's Bedrock, an authorized evaluation and the comparison",
    )
    demo.add_argument(
        "--real",
        action="store_true",
        help="with --loop: the loop with a real model, nothing simulated: SmolLM2-135M-Instruct served by "
        "`benchgen model serve` in a subprocess, a live run of it, a training run on that server and the "
        "evaluation of the trained checkpoint (needs the model extra)",
    )
    demo.add_argument(
        "--method",
        choices=("demonstration", "reinforcement"),
        default="demonstration",
        help="with --loop --real: reinforcement adds GRPO on an openai-rft package of the run's mistakes, "
        "rewarded by the environment's scoring, from the base model and from the SFT checkpoint, each "
        "evaluated on the same held-out cases (default demonstration: SFT only)",
    )
    demo.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.real and not args.loop:
        print("--real goes with --loop: run benchgen demo --loop --real")
        return 2
    if args.method == "reinforcement" and not args.real:
        print(
            "--method reinforcement goes with --loop --real: the simulated loop trains on Bedrock, which "
            "BenchGen does not start reinforcement fine-tuning on; the real loop's model server trains GRPO"
        )
        return 2
    if args.real:
        example = EXAMPLES / (args.example or REAL_EXAMPLE)
        if args.method == "reinforcement":
            source = SelfHostedModel(grpo_hyperparameters=dict(GRPO_HYPERPARAMETERS))
            return run_loop(source, example, args.out or Path("out/demo-real-rl"))
        return run_loop(SelfHostedModel(), example, args.out or Path("out/demo-real"))
    args.example = args.example or DEFAULT_EXAMPLE
    if args.loop:
        return run_loop(SimulatedModels(), EXAMPLES / args.example, args.out or Path("out/demo-loop"))
    return run_demo(args)
