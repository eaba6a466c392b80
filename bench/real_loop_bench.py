"""The real loop, measured: each step's wall time and peak memory, the model's tokens per second, and
what the evaluation found (verdict, accuracy and answer rate before and after, fixed / broken, p-value).

It runs `benchgen demo --loop --real`'s loop once (SmolLM2-135M-Instruct, served by `benchgen model
serve` on this machine, on ``examples/arithmetic-en``) while a thread samples, every half second, the
resident memory of this process (the local cloud and the in-process Lambda handlers) and of the model
server, and files each sample under the step under way. Tokens per second are the completion tokens the
server reported (``usage`` in each answer of the inference logs) over the run's wall time.

    .venv/bin/python bench/real_loop_bench.py --json real-loop-bench.json
    .venv/bin/python bench/real_loop_bench.py --method reinforcement --json real-loop-rl-bench.json

With ``--method reinforcement`` the loop goes on to GRPO (from the base model, and from the SFT checkpoint),
and the bench adds, per GRPO leg: its training and evaluation wall time, the rollouts (sampled answers) per
second and the reward curve the server's job logged, the trained model's tokens per second answering the
held-out cases, and its comparison (GRPO with the base run, SFT+GRPO with the SFT model's run).

The goal: ``improved`` at p < 0.01 on the held-out cases. Numbers from a busy machine are slower, not
different in kind: the verdict and accuracies do not depend on the machine's speed (greedy decoding,
seeded training), the times do.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from cli.loop import LEGS, Loop, run_loop
from cli.self_hosted_model import GRPO_HYPERPARAMETERS, REAL_EXAMPLE, SelfHostedModel

ROOT = Path(__file__).resolve().parents[1]

SAMPLE_EVERY_S = 0.5
GOAL_P = 0.01


def rss_mb(pid: int | str) -> float | None:
    """A process's resident memory now, in MB (Linux's /proc), or None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class MemorySampler:
    """The peak resident memory of the bench process and of the model server, per step of the loop."""

    def __init__(self) -> None:
        self.peaks: dict[str, dict[str, float]] = {}
        self._loop: Loop | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def watch(self, loop: Loop) -> None:
        self._loop = loop
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            loop = self._loop
            step = loop.current if loop is not None else None
            if loop is None or step is None:
                continue
            found = {"local_cloud_mb": rss_mb("self")}
            server = loop.found.get("model_server_pid")
            if server is not None:
                found["model_server_mb"] = rss_mb(server)
            peaks = self.peaks.setdefault(step, {})
            for name, value in found.items():
                if value is not None:
                    peaks[name] = round(max(value, peaks.get(name, 0.0)), 1)


def completion_tokens(cloud_out: Path) -> dict[str, int]:
    """Completion tokens per run id, read from the inference logs the loop's runs left in ``cloud_out``."""
    found: dict[str, int] = {}
    for log in sorted(cloud_out.glob("*.inference_log.jsonl")):
        total = 0
        for line in log.read_text(encoding="utf-8").splitlines():
            raw = json.loads(line).get("raw")
            usage = json.loads(raw).get("usage", {}) if raw else {}
            total += int(usage.get("completion_tokens") or 0)
        found[log.name.split(".", 1)[0]] = total
    return found


def per_second(count: int, seconds: float | None) -> float | None:
    return round(count / seconds, 1) if seconds else None


def measure(out: Path, method: str = "demonstration", legs: tuple[str, ...] = LEGS) -> dict[str, Any]:
    sampler = MemorySampler()
    started = time.monotonic()
    grpo = dict(GRPO_HYPERPARAMETERS) if method == "reinforcement" else None
    source = SelfHostedModel(grpo_hyperparameters=grpo, reinforcement_legs=legs)
    try:
        code = run_loop(source, ROOT / "examples" / REAL_EXAMPLE, out, watch=sampler.watch)
    finally:
        sampler.stop()
    total_s = time.monotonic() - started
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    timings = summary["timings_s"]
    tokens = completion_tokens(out)
    base_tokens = tokens.get(summary["base_run_id"] or "", 0)
    tuned_tokens = tokens.get(summary["tuned_run_id"] or "", 0)
    comparison = summary.get("comparison") or {}
    found = {
        "exit_code": code,
        "stopped": summary["stopped"],
        "model": summary["model"],
        "benchmark": REAL_EXAMPLE,
        "total_s": round(total_s, 1),
        "steps": {
            name: {"wall_s": seconds, "peak_rss_mb": sampler.peaks.get(name, {})}
            for name, seconds in timings.items()
        },
        "tokens_per_s": {
            "base_run": per_second(base_tokens, timings.get("base_run_s")),
            "evaluation": per_second(tuned_tokens, timings.get("evaluation_s")),
        },
        "completion_tokens": {"base_run": base_tokens, "tuned_run": tuned_tokens},
        "base_metrics": summary["base_metrics"],
        "tuned_metrics": summary.get("tuned_metrics"),
        "splits": summary["splits"],
        "comparison": comparison,
        "goal": f"improved at p < {GOAL_P} on the held-out cases",
        "goal_met": goal_met(comparison),
    }
    if grpo is not None:
        found["method"] = method
        found["grpo_hyperparameters"] = grpo
        found["reinforcement"] = {
            name: {
                "base_model": leg.get("base_model"),
                "result_model": leg.get("result_model"),
                "training_s": timings.get(f"{name}_training_s"),
                "evaluation_s": timings.get(f"{name}_evaluation_s"),
                "steps": leg.get("steps"),
                "rollouts_per_s": leg.get("rollouts_per_s"),
                "completion_tokens_per_s": leg.get("completion_tokens_per_s"),
                "reward_curve": leg.get("reward_curve"),
                "evaluation_tokens_per_s": per_second(
                    tokens.get(leg.get("tuned_run_id") or "", 0), timings.get(f"{name}_evaluation_s")
                ),
                "comparison": leg.get("comparison"),
                "goal_met": goal_met(leg.get("comparison") or {}),
            }
            for name, leg in (summary.get("reinforcement") or {}).items()
        }
    return found


def goal_met(comparison: dict[str, Any]) -> bool:
    return bool(comparison.get("verdict") == "improved" and comparison.get("mcnemar_p", 1.0) < GOAL_P)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/real-loop-bench"), help="the loop's files")
    parser.add_argument("--json", type=Path, help="where to write the measurements as JSON")
    parser.add_argument(
        "--method",
        choices=("demonstration", "reinforcement"),
        default="demonstration",
        help="reinforcement: GRPO from the base model and from the SFT checkpoint after the SFT loop",
    )
    parser.add_argument(
        "--legs",
        nargs="+",
        choices=LEGS,
        default=list(LEGS),
        help="with reinforcement, the GRPO legs to train and evaluate (default: both, in this order)",
    )
    args = parser.parse_args(argv)
    found = measure(args.out, args.method, tuple(args.legs))
    text = json.dumps(found, indent=2, sort_keys=True)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0 if found["exit_code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
