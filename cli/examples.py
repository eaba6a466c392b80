"""``benchgen examples generate``: the committed ``examples/`` tree, or one environment of any size."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from examplegen import ENVIRONMENTS, EXAMPLES_SEED


def register(subparsers: Any) -> None:
    examples = subparsers.add_parser("examples", help="generate example environments and submissions")
    commands = examples.add_subparsers(dest="examples_command", required=True, metavar="COMMAND")
    generate = commands.add_parser(
        "generate",
        help="write the example environments (all six, small) or one environment of a chosen size",
        description="Without --env, writes every example environment into OUT/<name>/ exactly as committed "
        "in examples/. With --env, writes that one environment with --cases cases into OUT/.",
    )
    generate.add_argument("--out", type=Path, default=Path("examples"), help="output folder")
    generate.add_argument("--seed", type=int, default=EXAMPLES_SEED, help=f"seed (default {EXAMPLES_SEED})")
    generate.add_argument("--env", choices=ENVIRONMENTS, help="generate only this environment")
    generate.add_argument("--cases", type=int, default=1_000, help="cases for --env (default 1000)")
    generate.add_argument(
        "--format", choices=["json", "jsonl"], help="submission format for --env (default: per environment)"
    )
    generate.add_argument("--zip", action="store_true", help="also pack each bundle as bundle.zip")
    generate.set_defaults(func=run_generate)
    serve = commands.add_parser(
        "serve-models",
        help="serve the SIMULATED example models over an OpenAI-compatible API on this machine",
        description="Answers the example environments' questions as example-base and example-tuned would, "
        "with texts written by the example generator: simulated models, for live runs on the local cloud.",
    )
    serve.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765)")
    serve.set_defaults(func=run_serve_models)


def run_generate(args: argparse.Namespace) -> int:
    from examplegen import generate_environment, generate_examples, write_bundle_zip

    out: Path = args.out
    if args.env is None:
        made = generate_examples(out, seed=args.seed)
    else:
        if args.cases < 1:
            print("error: --cases must be at least 1", file=sys.stderr)
            return 2
        fmt = args.format
        made = [generate_environment(args.env, out, cases=args.cases, seed=args.seed, submission_format=fmt)]
    for item in made:
        if args.zip:
            write_bundle_zip(item.bundle_dir, item.bundle_dir.parent / "bundle.zip")
        print(
            f"{item.name}: {item.cases:,} cases, {item.failing:,} meant to fail ({item.fail_share:.0%}) "
            f"-> {item.bundle_dir} + {item.submission_path}"
        )
    return 0


def run_serve_models(args: argparse.Namespace) -> int:
    from localcloud.model_server import MODELS, SIMULATED_NOTICE, ExampleModelServer
    from localcloud.providers.openai_compatible import SIMULATED_TRAINING

    with ExampleModelServer(port=args.port) as server:
        print(f"{SIMULATED_NOTICE}.")
        print(f"Serving {', '.join(MODELS)} at {server.base_url} (openai-compatible base URL); Ctrl-C stops.")
        print(f"{server.base_url}/fine-tunes: {SIMULATED_TRAINING}; a job ends after a few reads.")
        with contextlib.suppress(KeyboardInterrupt):
            server.wait()
    return 0
