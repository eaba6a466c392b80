"""What the benches share: peak memory, a step run in a fresh process, and the command line around it.

Each measured step runs in its own Python process, started from the bench script itself with hidden
arguments, so one step's peak memory cannot show up in another's. That process is pinned to one core
(the last this process may use), so a step that starts threads or processes cannot spread over several:
its CPU time is what one core spends on it, and its wall time, on a machine doing nothing else, too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# (bundle, input, out, **options) -> measurements; options are strings given by the parent.
Step = Callable[..., dict[str, Any]]
# (sizes, workdir, the parsed command line) -> results, written as JSON with --json
Bench = Callable[[list[int], Path, argparse.Namespace], Any]


def peak_rss_mb() -> float:
    """This process's peak resident memory, in MB.

    On Linux, VmHWM: ru_maxrss would also count the parent's memory at the fork that started this
    process (the kernel keeps the larger of the forked copy's peak and the new program's), so a step
    started by a bench that holds a run's data in memory would report the bench's size.
    """
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def pin_to_one_core() -> int:
    """Restrict this process (and what it starts) to one of the cores it may use; returns that core."""
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return core


@dataclass
class Clock:
    """Wall and CPU time of consecutive laps of one process (CPU: this process's user and system time)."""

    wall: float = field(default_factory=time.perf_counter)
    cpu: float = field(default_factory=time.process_time)

    def lap(self) -> dict[str, float]:
        """The time since the last lap (or since the clock started), and starts the next lap."""
        wall, cpu = time.perf_counter(), time.process_time()
        spent = {"seconds": wall - self.wall, "cpu_seconds": cpu - self.cpu}
        self.wall, self.cpu = wall, cpu
        return spent


def in_fresh_process(
    script: str,
    step: str,
    bundle: Path,
    source: Path,
    out: Path,
    options: Mapping[str, object] | None = None,
) -> dict[str, Any]:
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
        *(f"--option={name}={value}" for name, value in (options or {}).items()),
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
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
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
    parser.add_argument("--option", action="append", default=[], help=argparse.SUPPRESS)
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    if args.measure:
        core = pin_to_one_core()
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        options = dict(option.split("=", 1) for option in args.option)
        result = steps[args.measure](Path(args.bundle), Path(args.input), out, **options)
        result["peak_rss_mb"] = peak_rss_mb()
        result["core"] = core
        print(json.dumps(result))
        return 0
    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        results = bench(sizes, args.workdir, args)
    else:
        with tempfile.TemporaryDirectory(prefix="benchgen-bench-") as tmp:
            results = bench(sizes, Path(tmp), args)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def state_seconds(history: list[dict[str, Any]], state: str) -> float:
    """Seconds between a state's entry and its exit in an execution history."""
    entered = exited = None
    for event in history:
        details = event.get("stateEnteredEventDetails") or event.get("stateExitedEventDetails") or {}
        if details.get("name") != state:
            continue
        if event["type"].endswith("StateEntered"):
            entered = event["timestamp"]
        elif event["type"].endswith("StateExited"):
            exited = event["timestamp"]
    if entered is None or exited is None:
        return float("nan")
    return float((exited - entered).total_seconds())
