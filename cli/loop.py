"""`benchgen demo --loop`: evaluate a model, train on its mistakes, and measure the trained model again,
every step on the local cloud and through the REST API, as a user would drive it.

The models are the example server's SIMULATED ones (``localcloud/model_server.py``), started in-process
on a loopback port: ``example-base`` answers as the example submissions do and ``example-tuned`` gets two
thirds of its mistakes right. Nothing the loop prints says anything about a real model, and it says so.

1. an openai-compatible connection to the example server, and a live run of ``example-base``;
2. the dataset the run saved, a demonstration preparation of it, and its ``bedrock-conversation`` package;
3. a Bedrock connection and a training run on moto's Bedrock model customization, whose job the local
   cloud's provider clock moves to Completed;
4. an evaluation of the trained model (the demo user is in the evaluators group);
5. the comparison report's verdict; ``summary.json`` names every id.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from benchgen.outputs import RunOutput
from cli.api_client import Api
from cli.demo import (
    ENVIRONMENT_VERSION,
    EXAMPLES,
    Progress,
    example_cases,
    examples_available,
    follow_execution,
    follow_run,
    package_of,
    prepare,
    register_example,
)
from cli.gap_reasons import WrongCases
from cli.local import DEMO_USER, demo_password, sign_in_demo_user

PACKAGE_PROFILE = "bedrock-conversation"
# A Bedrock base model that takes Nova conversation rows: the example base model is no Bedrock model,
# so the training run names this one explicitly (and the API warns that it overrides the recorded one).
BEDROCK_BASE_MODEL = "amazon.nova-micro-v1:0:128k"
# The role Bedrock would assume to read the training files; on the local cloud nothing assumes it.
TRAINING_ROLE = "arn:aws:iam::{account}:role/benchgen-local-training"
TRAINING_TERMINAL = ("Succeeded", "Failed", "Cancelled")
EVALUATION_TERMINAL = ("Completed", "Failed")
SAMPLING = {"temperature": 0, "max_tokens": 512}

SIMULATED = (
    "The example models are simulated: example-base and example-tuned answer with texts the BenchGen "
    "example generator wrote, no model is involved, and nothing measured here says anything about a real "
    "model."
)
STAND_IN = (
    "A Bedrock custom model answers only once it is deployed (a custom model deployment or provisioned "
    "throughput), and the local cloud has neither: the evaluation asks example-tuned, the example server's "
    "stand-in for the trained model {result_model}."
)


def run_loop(args: argparse.Namespace) -> int:
    from infra.stacks.api import EVALUATION_WAIT_SECONDS
    from localcloud.cloud import LocalCloud
    from localcloud.model_server import ExampleModelServer

    example = EXAMPLES / args.example
    if not (example / "bundle" / "competition.yaml").is_file():
        print(
            f"no example environment at {example}: run from a checkout, or pick one of {examples_available()}"
        )
        return 2
    out: Path = args.out or Path("out/demo-loop")
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    progress = Progress()
    print(SIMULATED, flush=True)
    progress.step("starting the local cloud (synthesizing the CDK app, creating its resources)")
    loop = Loop(out, progress)
    # The evaluation checks its runs every second here, not every minute: moto's Wait really sleeps.
    with LocalCloud(context={EVALUATION_WAIT_SECONDS: 1}) as cloud, ExampleModelServer() as models:
        progress.step(
            f"local cloud up: synthesis {cloud.timings['synthesis_s']:.1f}s, "
            f"resources {cloud.timings['resources_s']:.1f}s; simulated models at {models.base_url}"
        )
        token = sign_in_demo_user(cloud, demo_password())
        with cloud.serve_api(access_log=False) as server:
            progress.step(f"REST API on {server.url}, signed in as {DEMO_USER} (in the evaluators group)")
            loop.run(cloud, Api(server.url, token), example, models.base_url)
    summary = loop.summary()
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    progress.step(f"wrote {out / 'summary.json'}")
    if loop.stopped:
        print(f"The loop stopped: {loop.stopped}")
        return 1
    return 0


class Loop:
    """The loop's steps in order; what each found is kept for the summary, and the first failure stops it."""

    def __init__(self, out: Path, progress: Progress) -> None:
        self.out = out
        self.progress = progress
        self.found: dict[str, Any] = {}
        self.stopped: str | None = None
        self.wrong_cases: WrongCases | None = None

    def run(self, cloud: Any, api: Api, example: Path, base_url: str) -> None:
        try:
            environment_id = register_example(cloud, api, example, self.out, self.progress)
            self.base_run(cloud, api, environment_id, base_url)
            self.wrong_cases = self.base_runs_mistakes(cloud, api, example)
            self.package(api, environment_id)
            self.train(api)
            self.evaluate(cloud, api)
        except (RuntimeError, TimeoutError) as error:
            self.stopped = str(error)

    def step(self, number: int, text: str) -> None:
        self.progress.step(f"step {number}/5: {text}")

    def base_run(self, cloud: Any, api: Api, environment_id: str, base_url: str) -> None:
        from localcloud.model_server import BASE_MODEL

        self.step(1, f"a live run of {BASE_MODEL} through an openai-compatible connection")
        connection = api.expect(
            "POST",
            "/connections",
            201,
            {"name": "simulated example models", "provider": "openai-compatible", "base_url": base_url},
        )
        self.found["models_connection_id"] = connection["connection_id"]
        created = api.expect(
            "POST",
            "/runs",
            201,
            {
                "environment_id": environment_id,
                "version": ENVIRONMENT_VERSION,
                "model": BASE_MODEL,
                "model_config": {
                    "connection_id": connection["connection_id"],
                    "model_id": BASE_MODEL,
                    "sampling": SAMPLING,
                },
            },
        )
        run_id = created["run"]["run_id"]
        self.found["base_run_id"] = run_id
        self.progress.step(f"run {run_id} created: {created['run']['status']}")
        if follow_run(api, run_id, self.progress, timeout=300) != "Completed":
            raise RuntimeError(f"the live run {run_id} failed: {api.expect('GET', f'/runs/{run_id}', 200)}")
        follow_execution(cloud, run_id, self.progress)
        run = api.expect("GET", f"/runs/{run_id}", 200)
        self.found["base_score"] = run.get("overall_score")
        print(f"Run {run_id} of {BASE_MODEL}: overall score {run.get('overall_score')}")

    def base_runs_mistakes(self, cloud: Any, api: Api, example: Path) -> WrongCases:
        """The cases the base run got wrong, which the preparation's coverage gaps follow from."""
        files = api.expect("GET", f"/runs/{self.found['base_run_id']}/files", 200)["files"]
        key = next(file["key"] for file in files if file["label"] == RunOutput.DETAILED_JSON.label)
        detailed = self.out / RunOutput.DETAILED_JSON.file_name
        cloud.client("s3").download_file(cloud.bucket, key, str(detailed))
        return WrongCases.of_run(example_cases(example), detailed)

    def package(self, api: Api, environment_id: str) -> None:
        run_id = self.found["base_run_id"]
        self.step(2, "the saved dataset, a preparation and a package for Bedrock")
        run = api.expect("GET", f"/runs/{run_id}", 200)
        if not run.get("dataset_id"):
            raise RuntimeError(f"run {run_id} saved no dataset: {run.get('artifact_reason')}")
        dataset = api.expect("GET", f"/datasets/{run['dataset_id']}", 200)
        self.found["dataset_id"] = dataset["dataset_id"]
        print(f"Saved dataset: {dataset['name']} ({dataset['example_count']} examples)")
        preparation = prepare(api, environment_id, run_id, self.progress, wrong_cases=self.wrong_cases)
        self.found["preparation_id"] = preparation["preparation_id"]
        if preparation["status"] != "Ready":
            raise RuntimeError(f"the preparation failed: {preparation['failure_reason']}")
        built = package_of(api, preparation["preparation_id"], self.progress, PACKAGE_PROFILE)
        self.found["package_id"] = built["package_id"]
        self.found["package_sha256"] = built["sha256"]
        if built["status"] != "Ready":
            raise RuntimeError(f"the {PACKAGE_PROFILE} package was {built['status']}: {built['reason']}")

    def train(self, api: Api) -> None:
        from localcloud.stack_template import ACCOUNT_ID

        self.step(3, f"a training run of {BEDROCK_BASE_MODEL} on the local cloud's (moto's) Bedrock")
        connection = api.expect(
            "POST",
            "/connections",
            201,
            {
                "name": "bedrock (local cloud)",
                "provider": "bedrock",
                "region": "us-east-1",
                "role_arn": TRAINING_ROLE.format(account=ACCOUNT_ID),
            },
        )
        self.found["bedrock_connection_id"] = connection["connection_id"]
        launched = api.expect(
            "POST",
            "/training-runs",
            202,
            {
                "package_id": self.found["package_id"],
                "connection_id": connection["connection_id"],
                "base_model": BEDROCK_BASE_MODEL,
            },
            headers={"Idempotency-Key": f"loop-{self.found['package_id']}"},
        )
        for line in launched.get("notices", []):
            print(f"  notice: {line}")
        for line in launched.get("warnings", []):
            print(f"  warning: {line}")
        training_run_id = launched["training_run"]["training_run_id"]
        self.found["training_run_id"] = training_run_id
        self.progress.step(f"training run {training_run_id}: {launched['training_run']['status']}")
        run = follow_statuses(
            api, f"/training-runs/{training_run_id}", TRAINING_TERMINAL, self.progress, "training run"
        )
        self.found["provider_job_id"] = run.get("job_id")
        self.found["provider_job_name"] = run.get("job_name")
        self.found["result_model"] = run.get("result_model")
        for change in run.get("timeline", []):
            provider = f" (provider: {change['provider_status']})" if change.get("provider_status") else ""
            print(f"  {change['at']}  {change['status']}{provider}")
        if run["status"] != "Succeeded":
            raise RuntimeError(
                f"the training run {training_run_id} {run['status']}: {run.get('failure_reason')}"
            )
        job, model = run.get("job_id"), run.get("result_model")
        print(f"Training run {training_run_id}: provider job {job}, model {model}")

    def evaluate(self, cloud: Any, api: Api) -> None:
        from localcloud.model_server import BASE_MODEL, TUNED_MODEL

        training_run_id = self.found["training_run_id"]
        self.step(4, "an authorized evaluation on the package's held-out cases")
        print(STAND_IN.format(result_model=self.found["result_model"]))
        created = authorize_evaluation(
            api, training_run_id, self.found["models_connection_id"], TUNED_MODEL, self.found["base_run_id"]
        )
        evaluation_id = created["evaluation_id"]
        self.found["evaluation_id"] = evaluation_id
        print(
            f"Evaluation {evaluation_id} authorized by {created['authorized_by']} through "
            f"{created['authorized_through']} at {created['authorized_at']}"
        )
        found = follow_statuses(
            api,
            f"/evaluations/{evaluation_id}",
            EVALUATION_TERMINAL,
            self.progress,
            "evaluation",
            timeout=600,
        )
        self.found["evaluation_base_run_id"] = found["base"]["run_id"]
        self.found["tuned_run_id"] = found["tuned"]["run_id"]
        if found["status"] != "Completed":
            raise RuntimeError(f"the evaluation {evaluation_id} failed: {found.get('failure_reason')}")
        self.step(5, "the comparison")
        answer = api.expect("GET", f"/evaluations/{evaluation_id}/report", 200)
        report = answer["report"]
        self.found["verdict"] = report["comparison"]["verdict"]
        (self.out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        html = self.out / "report.html"
        cloud.client("s3").download_file(
            cloud.bucket, object_key(answer["html_url"], cloud.bucket), str(html)
        )
        self.found["report_files"] = [str(self.out / "report.json"), str(html)]
        print(
            f"{found['paired_cases']} held-out cases: accuracy {found['accuracy_before']:.1%} "
            f"({BASE_MODEL}, run {found['base']['run_id']}) -> {found['accuracy_after']:.1%} "
            f"({TUNED_MODEL}, run {found['tuned']['run_id']})"
        )
        print(
            f"Verdict on the held-out cases, {BASE_MODEL} -> {TUNED_MODEL}: {self.found['verdict']} "
            "(simulated models: this says nothing about a real model)"
        )
        print(f"  {found['verdict_reason']}")
        print(f"  {found['notice']}")
        print(f"Report: {self.out / 'report.json'} and {html}")

    def summary(self) -> dict[str, Any]:
        """Every id the loop made, under a fixed set of keys (None where the loop did not get that far)."""
        keys = (
            "models_connection_id",
            "base_run_id",
            "base_score",
            "dataset_id",
            "preparation_id",
            "package_id",
            "package_sha256",
            "bedrock_connection_id",
            "training_run_id",
            "provider_job_id",
            "provider_job_name",
            "result_model",
            "evaluation_id",
            "evaluation_base_run_id",
            "tuned_run_id",
            "verdict",
            "report_files",
        )
        return {
            **{key: self.found.get(key) for key in keys},
            "simulated_models": SIMULATED,
            "stopped": self.stopped,
        }


def authorize_evaluation(
    api: Api, training_run_id: str, connection_id: str, model_id: str, base_run_id: str
) -> dict[str, Any]:
    """Authorize the evaluation of ``model_id`` (through ``connection_id``) on the training run's held-out
    cases; the loop's first live run judged every case, the held-out ones among them, so it is reused as
    the base side. Its idempotency key is the training run's, so a repeated step starts nothing new."""
    created: dict[str, Any] = api.expect(
        "POST",
        f"/training-runs/{training_run_id}/evaluations",
        202,
        {"tuned": {"connection_id": connection_id, "model_id": model_id}, "base_run_id": base_run_id},
        headers={"Idempotency-Key": f"loop-{training_run_id}"},
    )
    return created


def object_key(url: str, bucket: str) -> str:
    """The S3 key a presigned URL points at, in the virtual-hosted or the path style."""
    path = unquote(urlsplit(url).path).lstrip("/")
    return path.removeprefix(f"{bucket}/") if not urlsplit(url).netloc.startswith(f"{bucket}.") else path


def follow_statuses(
    api: Api, path: str, final: tuple[str, ...], progress: Progress, what: str, timeout: float = 300.0
) -> dict[str, Any]:
    """``GET path`` until its status is one of ``final``, printing each status it passes through."""
    seen = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = api.expect("GET", path, 200)
        if found["status"] != seen:
            seen = found["status"]
            progress.step(f"{what} {seen}")
        if seen in final:
            return dict(found)
        time.sleep(0.1)
    raise TimeoutError(f"the {what} at {path} was still {seen} after {timeout:.0f}s")
