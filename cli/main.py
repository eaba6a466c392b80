"""``benchgen``: the operator's command line. Each command lives in its own module and loads heavy
dependencies (CDK, moto, the engine) only when it runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cli import bundle, compare, demo_command, examples, local, model, prepare, score_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchgen",
        description="Benchmark environments that judge a model and turn its mistakes into training data.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (bundle, score_command, prepare, compare, examples, local, model, demo_command):
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from infra.node_notices import silence_node_release_banners

    args = build_parser().parse_args(argv)
    # Before a command imports CDK, whose Node.js process announces its release on start (as b'...' lines).
    silence_node_release_banners()
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
