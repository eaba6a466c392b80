"""A judged run with the real model as its judge, end to end on the local cloud: SmolLM2-135M-Instruct,
served by `benchgen model serve` on this machine, judges the answers of ``examples/judge``.

The bench starts the model server and the local cloud as `benchgen demo --loop --real` does, creates an
openai-compatible connection to the server under the name the example's ``judge:`` section gives its
connection, and registers a copy of the judged example whose ``judge:`` names the real model (temperature 0,
``--max-tokens`` for its JSON answer).
Registration has the judge calibrated: its CalibrationPipeline asks it about the bundle's human-labelled
answers, as many at once as the connection's ``max_in_flight``, and the bench waits for the figures, and the
copy keeps an evenly spaced ``--calibration`` of them to keep the bench short (the figures say how many were
asked). The example submission is then uploaded, judged and scored, and the bench prints and writes:

- the judge's agreement with people per criterion (n, accuracy, kappa with its 95% interval, unjudged), as
  the run shows it beside its scores;
- the run's judged scores, its judged and unjudged counts and the first unjudged reasons;
- the judge's calls, tokens and wall time, and its family (the same-family flag is absent when the
  submission's model name tells no family, and the run's family note says so);
- the load average before and after, since the machine is shared and the times depend on it.

    .venv/bin/python bench/judged_real_bench.py --json judged-real-bench.json

A 135M model is a poor judge: most of its answers are expected to be unreadable or to disagree with
people. The bench measures that; it does not assert the judge is good.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from cli.demo import EXAMPLES, Progress, register_example, submit
from cli.local import demo_password, sign_in_demo_user
from cli.model_process import ModelServerProcess
from cli.self_hosted_model import CONCURRENCY, SERVED_MODEL, WEIGHTS
from examplegen.judge_env import JUDGE_CONNECTION

EXAMPLE = EXAMPLES / "judge"
# Enough for the judge's JSON (a score and a one-sentence reason per criterion of three).
MAX_TOKENS = 200
CALIBRATION_ANSWERS = 12
# How long registration and the judge's calibration on the labelled answers may take, by default.
REGISTRATION_TIMEOUT_S = 900.0
# The model the example submission's answers are recorded as coming from.
ANSWERS = "example-answers"


def judged_copy(out: Path, calibration: int, max_tokens: int) -> Path:
    """The judged example copied under ``out``, its judge the real model (through the connection the
    example names, by name) and its calibration set cut to ``calibration`` evenly spaced answers."""
    copy = out / "example" / EXAMPLE.name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(EXAMPLE, copy)
    spec_path = copy / "bundle" / "competition.yaml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec["judge"] = {
        **spec["judge"],
        "model_id": SERVED_MODEL,
        "sampling": {"temperature": 0, "max_tokens": max_tokens},
    }
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    labelled_path = copy / "bundle" / spec["judge"]["calibration"]
    labelled = labelled_path.read_text(encoding="utf-8").splitlines()
    step = max(1, len(labelled) // calibration)
    labelled_path.write_text("\n".join(labelled[::step][:calibration]) + "\n", encoding="utf-8")
    return copy


def figures(run: dict[str, Any]) -> dict[str, Any]:
    """What the run shows of its judge and its judged scores."""
    judge = run.get("judge") or {}
    judging = run.get("judging") or {}
    return {
        "run_id": run["run_id"],
        "status": run["status"],
        "failure_reason": run.get("failure_reason"),
        "overall_score": run.get("overall_score"),
        "metrics": {tile["key"]: tile["value"] for tile in run.get("metrics", [])},
        "calibration": {
            "status": judge.get("status"),
            "reason": judge.get("reason"),
            "answers": judge.get("answers"),
            "criteria": judge.get("criteria", []),
        },
        "judging": judging,
    }


def describe(found: dict[str, Any]) -> list[str]:
    """The figures as lines a reader can check at a glance."""
    calibration = found["calibration"]
    lines = [f"Judge calibration: {calibration['status']} on {calibration['answers']} answers"]
    if calibration["reason"]:
        lines.append(f"  {calibration['reason']}")
    for criterion in calibration["criteria"]:
        kappa = criterion.get("kappa")
        shown = (
            f"kappa {kappa:.2f} [{criterion['kappa_low']:.2f}, {criterion['kappa_high']:.2f}]"
            if kappa is not None
            else f"kappa undefined ({criterion.get('note') or 'no answer judged'})"
        )
        accuracy = criterion.get("accuracy")
        lines.append(
            f"  {criterion['criterion']}: n {criterion['n']}, accuracy "
            f"{'-' if accuracy is None else f'{accuracy:.0%}'}, {shown}, unjudged {criterion['unjudged']}"
        )
    judging = found["judging"]
    lines.append(f"Run {found['run_id']}: {found['status']}, scores {found['metrics']}")
    lines.append(
        f"Judging: {judging.get('cases')} cases, {judging.get('judged')} judged, "
        f"{judging.get('unreadable')} unreadable, {judging.get('errors')} errors; "
        f"{judging.get('calls')} calls, "
        f"{judging.get('input_tokens')} input / {judging.get('output_tokens')} output tokens; "
        f"family {judging.get('family')}, same family {judging.get('same_family')}"
        f"{'; ' + judging['family_note'] if judging.get('family_note') else ''}"
    )
    lines.extend(f"  unjudged: {reason}" for reason in judging.get("unjudged_reasons", []))
    return lines


def bench(
    out: Path, calibration: int, max_tokens: int, run_timeout: float, registration_timeout: float
) -> dict[str, Any]:
    from localcloud.cloud import LocalCloud

    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    progress = Progress()
    timings: dict[str, float] = {}
    load_before = os.getloadavg()
    progress.step(f"starting the model server ({SERVED_MODEL} from {WEIGHTS})")
    with (
        ModelServerProcess(
            WEIGHTS, name=SERVED_MODEL, work=out / "model-server", max_batch=CONCURRENCY
        ) as server,
        LocalCloud() as cloud,
    ):
        timings["model_server_start_s"] = round(server.wait_until_ready(), 1)
        progress.step(f"model server up: {server.tail(1)}")
        signed_in = sign_in_demo_user(cloud, demo_password())
        with cloud.serve_api(access_log=False) as api_server:
            api = signed_in.api(api_server.url)
            # The example names its judge's connection by name: the demo user's own of that name is used.
            api.expect(
                "POST",
                "/connections",
                201,
                {"name": JUDGE_CONNECTION, "provider": "openai-compatible", "base_url": server.base_url},
            )
            example = judged_copy(out, calibration, max_tokens)
            started = time.monotonic()
            environment_id = register_example(
                cloud, api, example, out, progress, timeout=registration_timeout
            )
            timings["registration_with_calibration_s"] = round(time.monotonic() - started, 1)
            started = time.monotonic()
            submission = EXAMPLE / "submission" / "predictions.jsonl"
            run_id, _ = submit(cloud, api, environment_id, submission, ANSWERS, progress, timeout=run_timeout)
            timings["judged_run_s"] = round(time.monotonic() - started, 1)
            found = figures(api.expect("GET", f"/runs/{run_id}", 200))
    found |= {
        "judge_model": SERVED_MODEL,
        "calibration_set": {"asked": calibration, "of": _lines(EXAMPLE / "bundle" / "calibration.jsonl")},
        "max_tokens": max_tokens,
        "timings_s": timings,
        "load_average_before": [round(value, 2) for value in load_before],
        "load_average_after": [round(value, 2) for value in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    return found


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("out/judged-real-bench"))
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--calibration", type=int, default=CALIBRATION_ANSWERS, help="labelled answers asked")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help="the judge's longest answer")
    parser.add_argument("--run-timeout", type=float, default=1800.0, help="seconds the run may take")
    parser.add_argument(
        "--registration-timeout",
        type=float,
        default=REGISTRATION_TIMEOUT_S,
        help="seconds registration and the judge's calibration may take (a bigger --calibration needs more)",
    )
    args = parser.parse_args(argv)
    if args.calibration < 1:
        parser.error("--calibration must be at least 1: the judge is measured on that many labelled answers")
    found = bench(args.out, args.calibration, args.max_tokens, args.run_timeout, args.registration_timeout)
    for line in describe(found):
        print(line)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0 if found["status"] == "Completed" else 1


if __name__ == "__main__":
    raise SystemExit(main())
