"""`benchgen demo`: its arguments, and which demo they ask for (one run, or with ``--loop`` the whole loop).

The loop builds on the single-run demo's steps, so the choice between them lives here, above both.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from infra.cli.demo import run_demo
from infra.cli.loop import run_loop


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
        help="where to write the run's files (default out/demo, out/demo-loop with --loop)",
    )
    demo.add_argument("--example", default="gsm8k-tr", help="example environment under examples/")
    demo.add_argument("--model", default="Qwen2.5-7B-LoRA", help="the model name recorded on the run")
    demo.add_argument(
        "--loop",
        action="store_true",
        help="the whole loop instead: a live run of a simulated example model, its dataset, a package, a "
        "training run on moto's Bedrock, an authorized evaluation and the comparison",
    )
    demo.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return run_loop(args) if args.loop else run_demo(args)
