"""What the benches share: peak memory, a step run in a fresh process, and the command line around it.

Each measured step runs in its own Python process, started from the bench script itself with hidden
arguments, so one step's peak memory cannot show up in another's.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

Step = Callable[[Path, Path, Path], dict[str, Any]]  # (bundle, input, out) -> measurements
Bench = Callable[[list[int], Path], list[dict[str, Any]]]  # (sizes, workdir) -> results


def peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def in_fresh_process(script: str, step: str, bundle: Path, source: Path, out: Path) -> dict[str, Any]:
    """Run ``step`` of ``script`` in a new process and read the measurements it prints last."""
    command = [
        sys.executable,
        script,
        "--measure",
        step,
        "--bundle",
        str(bundle),
        "--input",
        str(source),
        "--out",
        str(out),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{step} measurement failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def growth_line(results: list[dict[str, Any]], steps: tuple[str, ...]) -> str:
    """How each step's peak memory grew from the smallest size to the largest: near 1 means it streams."""
    small, large = results[0], results[-1]
    growth = ", ".join(
        f"{step} x{large[step]['peak_rss_mb'] / small[step]['peak_rss_mb']:.2f}" for step in steps
    )
    return (
        f"peak memory {large['size']:,} / {small['size']:,} cases: {growth} "
        f"(cases x{large['size'] / small['size']:.0f})"
    )


def bench_main(
    argv: list[str] | None,
    *,
    description: str | None,
    default_sizes: str,
    steps: dict[str, Step],
    bench: Bench,
) -> int:
    """Run ``bench`` over ``--sizes``; or, in a child process, one step, printing its measurements."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default=default_sizes, help=f"comma-separated case counts ({default_sizes})"
    )
    parser.add_argument(
        "--workdir", type=Path, help="keep generated data and outputs here (default: a temp dir)"
    )
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--measure", choices=list(steps), help=argparse.SUPPRESS)
    parser.add_argument("--bundle", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        result = steps[args.measure](Path(args.bundle), Path(args.input), out)
        result["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(result))
        return 0
    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        results = bench(sizes, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="benchgen-bench-") as tmp:
            results = bench(sizes, Path(tmp))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0
