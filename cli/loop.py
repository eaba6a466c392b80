"""The loop of `benchgen demo --loop`: evaluate a model, train on its mistakes, and measure the trained model
again, every step on the local cloud and through the REST API, as a user would drive it.

What the models are is a :class:`ModelSource`: the example server's simulated ones
(``cli.simulated_models``) or a real model served on this machine (``cli.self_hosted_model``). The steps are
the same for every source:

1. an openai-compatible connection to the served models, and a live run of the base model on every case;
2. the dataset the run saved, a demonstration preparation of it (its coverage gaps explained by the run's
   mistakes), and a package;
3. a training run on the package;
4. an authorized evaluation of the trained model on the package's held-out cases, beside the base run;
5. the comparison report's verdict; ``summary.json`` names every id.

With the reinforcement method (a source whose ``reinforcement`` is set) three steps follow: a reinforcement
preparation of the same run, packaged with the ``openai-rft`` profile (the environment's scoring as its
grader); GRPO from the base model, and GRPO from the demonstration-trained checkpoint (SFT then GRPO, the
usual recipe); each evaluated on the same held-out cases and compared, GRPO with the base run and SFT+GRPO
with the SFT model's run.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from benchgen.finetune.split import DEFAULT_SHARES, SplitShares
from benchgen.outputs import RunOutput
from cli.api_client import Api
from cli.demo import (
    ENVIRONMENT_VERSION,
    Progress,
    example_cases,
    examples_available,
    follow_execution,
    package_of,
    prepare,
    register_example,
)
from cli.gap_reasons import WrongCases
from cli.local import DEMO_USER, demo_password, sign_in_demo_user

TRAINING_TERMINAL = ("Succeeded", "Failed", "Cancelled")
EVALUATION_TERMINAL = ("Completed", "Failed")
# What the summary keeps of the comparison: its numbers, not its case lists (those are in report.json).
COMPARISON_NUMBERS = (
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
# A reinforcement comparison keeps the answer rates too: a policy that learns the answer format shows there.
ANSWER_RATES = ("answering_before", "answering_after")
REINFORCEMENT_PROFILE = "openai-rft"
# The reinforcement legs: their name in the summary, and what each starts from and is compared with.
GRPO, SFT_GRPO = "grpo", "sft_grpo"
LEGS = (GRPO, SFT_GRPO)


class ModelSource(ABC):
    """Where the loop's models come from, and what differs with them: how they are served, what the base
    run and the training ask for, what stands for the trained model, and what the summary tells."""

    model: str  # the base model, as the served models name it
    connection_name: str  # the name of the openai-compatible connection to them
    package_profile: str
    # The live run's model settings beside its connection and model (sampling, limits).
    run_settings: dict[str, Any]
    # The connection's settings beside its name, provider and URL: its quotas (``limits``: the most its
    # models may be asked at once) and ``timeout_s``, which every run through it, the evaluations' among
    # them, takes for its own; None states none.
    connection_settings: dict[str, Any] | None = None
    # The training run's request beside its package and connection (base model, hyperparameters).
    training: dict[str, Any]
    # The verdict as the loop prints it; ``{base}``, ``{tuned}`` and ``{verdict}`` are filled in.
    verdict_line: str
    preparation_settings: dict[str, Any] | None = None
    # The reinforcement method's GRPO request beside its package and connection (the hyperparameters), or
    # None: the loop trains by demonstration only.
    reinforcement: dict[str, Any] | None = None
    # The reinforcement preparation's settings beside the demonstration's (the correct cases' share).
    reinforcement_settings: dict[str, Any] | None = None
    # The reinforcement legs the loop trains, in this order (a bench may measure one alone).
    reinforcement_legs: tuple[str, ...] = LEGS
    run_timeout_s: float = 300.0
    training_timeout_s: float = 300.0
    evaluation_timeout_s: float = 600.0

    def missing(self) -> str | None:
        """What this environment lacks to serve the models, said as what to do about it."""
        return None

    @abstractmethod
    def cloud_context(self) -> dict[str, Any]:
        """The CDK context the local cloud is synthesized with for these models."""

    @abstractmethod
    def serve(self, loop: Loop) -> AbstractContextManager[Callable[[], str]]:
        """Start the models (in the background where that takes a while) for as long as the context lasts;
        what it gives waits until they answer, says what they are, and returns their base URL."""

    def training_connection(self, loop: Loop, api: Api) -> str:
        """The connection the training runs through; by default the one the models are served through."""
        return str(loop.found["connection_id"])

    def tuned_model(self, loop: Loop) -> str:
        """The model the evaluation asks: the trained one, unless it cannot answer here (then say so)."""
        return str(loop.found["result_model"])

    @abstractmethod
    def summary(self, loop: Loop) -> dict[str, Any]:
        """What ``summary.json`` says of the loop, under keys fixed for this source."""


def run_loop(
    source: ModelSource, example: Path, out: Path, watch: Callable[[Loop], None] | None = None
) -> int:
    """The loop with ``source``'s models on ``example``; 0 when every step completed (whatever the verdict),
    1 if one failed, 2 if it could not start. ``watch`` is handed the loop before it starts (the bench
    samples its processes' memory through it)."""
    from localcloud.cloud import LocalCloud

    if not (example / "bundle" / "competition.yaml").is_file():
        print(
            f"no example environment at {example}: run from a checkout, or pick one of {examples_available()}"
        )
        return 2
    missing = source.missing()
    if missing:
        print(missing)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    # The handlers' structured logs and metrics are for CloudWatch; here the progress lines tell the story.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    progress = Progress()
    loop = Loop(source, example, out, progress)
    if watch is not None:
        watch(loop)
    try:
        with source.serve(loop) as ready:
            progress.step("starting the local cloud (synthesizing the CDK app, creating its resources)")
            with LocalCloud(context=source.cloud_context()) as cloud:
                progress.step(
                    f"local cloud up: synthesis {cloud.timings['synthesis_s']:.1f}s, "
                    f"resources {cloud.timings['resources_s']:.1f}s"
                )
                base_url = ready()
                signed_in = sign_in_demo_user(cloud, demo_password())
                with cloud.serve_api(access_log=False) as server:
                    progress.step(
                        f"REST API on {server.url}, signed in as {DEMO_USER} (in the evaluators group)"
                    )
                    loop.run(cloud, signed_in.api(server.url), base_url)
    except (RuntimeError, TimeoutError) as error:
        loop.stopped = loop.stopped or str(error)
    (out / "summary.json").write_text(
        json.dumps(loop.summary(), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    progress.step(f"wrote {out / 'summary.json'}")
    if loop.stopped:
        print(f"The loop stopped: {loop.stopped}")
        return 1
    return 0


class Loop:
    """The loop's steps in order; what each found and how long it took is kept for the summary, and the
    first failure stops it."""

    def __init__(self, source: ModelSource, example: Path, out: Path, progress: Progress) -> None:
        self.source = source
        self.example = example
        self.out = out
        self.progress = progress
        self.found: dict[str, Any] = {}
        self.timings: dict[str, float | None] = {}
        self.stopped: str | None = None
        self.current: str | None = None  # the step under way, named as its timing is

    def run(self, cloud: Any, api: Api, base_url: str) -> None:
        try:
            environment_id = self.timed(
                "register_s", lambda: register_example(cloud, api, self.example, self.out, self.progress)
            )
            self.timed("base_run_s", lambda: self.base_run(cloud, api, environment_id, base_url))
            self.timed("package_s", lambda: self.package(cloud, api, environment_id))
            self.timed("training_s", lambda: self.train(api))
            self.timed("evaluation_s", lambda: self.evaluate(cloud, api))
            if self.source.reinforcement is not None:
                self.reinforce(cloud, api, environment_id, base_url)
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
        total = 5 if self.source.reinforcement is None else 6 + len(self.source.reinforcement_legs)
        self.progress.step(f"step {number}/{total}: {text}")

    def base_run(self, cloud: Any, api: Api, environment_id: str, base_url: str) -> None:
        model = self.source.model
        self.step(1, f"a live run of {model} on every case, through an openai-compatible connection")
        connection = api.expect(
            "POST",
            "/connections",
            201,
            {
                "name": self.source.connection_name,
                "provider": "openai-compatible",
                "base_url": base_url,
                **(self.source.connection_settings or {}),
            },
        )
        self.found["connection_id"] = connection["connection_id"]
        created = api.expect(
            "POST",
            "/runs",
            201,
            {
                "environment_id": environment_id,
                "version": ENVIRONMENT_VERSION,
                "model": model,
                "model_config": {
                    "connection_id": connection["connection_id"],
                    "model_id": model,
                    **self.source.run_settings,
                },
            },
        )
        run_id = created["run"]["run_id"]
        self.found["base_run_id"] = run_id
        self.progress.step(f"run {run_id} created: {created['run']['status']}")
        if follow_live_run(cloud, api, run_id, self.progress, self.source.run_timeout_s) != "Completed":
            raise RuntimeError(f"the live run {run_id} failed: {api.expect('GET', f'/runs/{run_id}', 200)}")
        follow_execution(cloud, run_id, self.progress)
        self.found["base_score"] = api.expect("GET", f"/runs/{run_id}", 200).get("overall_score")
        self.found["base_metrics"] = self.run_metrics(cloud, api, run_id)
        print(f"Run {run_id} of {model}: {_metrics(self.found['base_metrics'])}")

    def run_metrics(self, cloud: Any, api: Api, run_id: str) -> dict[str, Any]:
        """The run's metrics; its inference log (every answer as the model gave it) is kept beside the
        summary as ``<run id>.inference_log.jsonl``."""
        run = api.expect("GET", f"/runs/{run_id}", 200)
        for file in api.expect("GET", f"/runs/{run_id}/files", 200)["files"]:
            if file["key"].endswith("/inference_log.jsonl"):
                target = self.out / f"{run_id}.inference_log.jsonl"
                cloud.client("s3").download_file(cloud.bucket, file["key"], str(target))
        return {tile["key"]: tile["value"] for tile in run["metrics"]}

    def base_runs_mistakes(self, cloud: Any, api: Api) -> WrongCases:
        """The cases the base run got wrong, which the preparation's coverage gaps follow from."""
        files = api.expect("GET", f"/runs/{self.found['base_run_id']}/files", 200)["files"]
        key = next(file["key"] for file in files if file["label"] == RunOutput.DETAILED_JSON.label)
        detailed = self.out / RunOutput.DETAILED_JSON.file_name
        cloud.client("s3").download_file(cloud.bucket, key, str(detailed))
        splits = (self.source.preparation_settings or {}).get("splits")
        shares = SplitShares(**splits) if splits else DEFAULT_SHARES
        return WrongCases.of_run(example_cases(self.example), detailed, shares)

    def package(self, cloud: Any, api: Api, environment_id: str) -> None:
        run_id = self.found["base_run_id"]
        profile = self.source.package_profile
        self.step(2, f"the saved dataset, a preparation and a {profile} package")
        run = api.expect("GET", f"/runs/{run_id}", 200)
        if not run.get("dataset_id"):
            raise RuntimeError(f"run {run_id} saved no dataset: {run.get('artifact_reason')}")
        dataset = api.expect("GET", f"/datasets/{run['dataset_id']}", 200)
        self.found["dataset_id"] = dataset["dataset_id"]
        print(f"Saved dataset: {dataset['name']} ({dataset['example_count']} examples)")
        preparation = prepare(
            api,
            environment_id,
            run_id,
            self.progress,
            settings=self.source.preparation_settings,
            wrong_cases=self.base_runs_mistakes(cloud, api),
        )
        self.found["preparation_id"] = preparation["preparation_id"]
        if preparation["status"] != "Ready":
            raise RuntimeError(f"the preparation failed: {preparation['failure_reason']}")
        detail = api.expect("GET", f"/preparations/{preparation['preparation_id']}", 200)
        self.found["splits"] = detail["splits"]
        self.found["held_out_cases"] = detail["held_out_count"]
        print(f"Rows per split: {detail['splits']}; held-out cases: {detail['held_out_count']}")
        built = package_of(api, preparation["preparation_id"], self.progress, profile)
        self.found["package_id"] = built["package_id"]
        self.found["package_sha256"] = built["sha256"]
        if built["status"] != "Ready":
            raise RuntimeError(f"the {profile} package was {built['status']}: {built['reason']}")

    def train(self, api: Api) -> None:
        training = self.source.training
        self.step(3, f"a training run of {training['base_model']} on the package")
        self.launch(api, self.found["package_id"], training, f"loop-{self.found['package_id']}", self.found)

    def launch(
        self, api: Api, package_id: str, training: dict[str, Any], key: str, found: dict[str, Any]
    ) -> None:
        """A training run of the package with ``training``'s request, followed to its end; its ids and model
        are kept in ``found``."""
        launched = api.expect(
            "POST",
            "/training-runs",
            202,
            {
                "package_id": package_id,
                "connection_id": self.source.training_connection(self, api),
                **training,
            },
            headers={"Idempotency-Key": key},
        )
        for line in launched.get("notices", []):
            print(f"  notice: {line}")
        for line in launched.get("warnings", []):
            print(f"  warning: {line}")
        training_run_id = launched["training_run"]["training_run_id"]
        found["training_run_id"] = training_run_id
        self.progress.step(f"training run {training_run_id}: {launched['training_run']['status']}")
        run = follow_statuses(
            api,
            f"/training-runs/{training_run_id}",
            TRAINING_TERMINAL,
            self.progress,
            "training run",
            timeout=self.source.training_timeout_s,
        )
        found["provider_job_id"] = run.get("job_id")
        found["provider_job_name"] = run.get("job_name")
        found["result_model"] = run.get("result_model")
        for change in run.get("timeline", []):
            provider = f" (provider: {change['provider_status']})" if change.get("provider_status") else ""
            print(f"  {change['at']}  {change['status']}{provider}")
        if run["status"] != "Succeeded":
            raise RuntimeError(
                f"the training run {training_run_id} {run['status']}: {run.get('failure_reason')}"
            )
        print(
            f"Training run {training_run_id}: provider job {run.get('job_id')}, model {run['result_model']}"
        )

    def evaluate(self, cloud: Any, api: Api) -> None:
        self.step(4, "an authorized evaluation on the package's held-out cases")
        tuned = self.source.tuned_model(self)
        self.evaluation(cloud, api, tuned, self.found["base_run_id"], self.found)
        self.step(5, "the comparison")
        self.compare(cloud, api, tuned, self.source.model, self.found, self.out)

    def evaluation(self, cloud: Any, api: Api, tuned: str, base_run_id: str, found: dict[str, Any]) -> None:
        """The authorized evaluation of ``tuned`` (``found``'s training run's model) beside ``base_run_id``
        on the held-out cases, followed to its end; its ids and the tuned run's metrics are kept in
        ``found``."""
        created = authorize_evaluation(
            api, found["training_run_id"], self.found["connection_id"], tuned, base_run_id
        )
        evaluation_id = created["evaluation_id"]
        found["evaluation_id"] = evaluation_id
        print(
            f"Evaluation {evaluation_id} authorized by {created['authorized_by']} through "
            f"{created['authorized_through']} at {created['authorized_at']}"
        )
        evaluated = follow_statuses(
            api,
            f"/evaluations/{evaluation_id}",
            EVALUATION_TERMINAL,
            self.progress,
            "evaluation",
            timeout=self.source.evaluation_timeout_s,
        )
        found["evaluation_base_run_id"] = (evaluated.get("base") or {}).get("run_id")
        found["tuned_run_id"] = (evaluated.get("tuned") or {}).get("run_id")
        if evaluated["status"] != "Completed":
            raise RuntimeError(f"the evaluation {evaluation_id} failed: {evaluated.get('failure_reason')}")
        found["tuned_metrics"] = self.run_metrics(cloud, api, found["tuned_run_id"])
        if evaluated.get("notice"):
            print(f"  {evaluated['notice']}")

    def compare(
        self, cloud: Any, api: Api, tuned: str, base: str, found: dict[str, Any], out: Path
    ) -> dict[str, Any]:
        """The comparison report of ``found``'s evaluation, written to ``out`` and printed; its numbers and
        verdict are kept in ``found``, and the whole comparison is returned."""
        answer = api.expect("GET", f"/evaluations/{found['evaluation_id']}/report", 200)
        report = answer["report"]
        comparison: dict[str, Any] = report["comparison"]
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        html = out / "report.html"
        cloud.client("s3").download_file(
            cloud.bucket, object_key(answer["html_url"], cloud.bucket), str(html)
        )
        found["report_files"] = [str(out / "report.json"), str(html)]
        found["comparison"] = {key: comparison[key] for key in COMPARISON_NUMBERS}
        found["verdict"] = comparison["verdict"]
        print(
            f"{comparison['paired_cases']} held-out cases: accuracy {comparison['accuracy_before']:.1%} "
            f"({base}, run {found['evaluation_base_run_id']}) -> {comparison['accuracy_after']:.1%} "
            f"({tuned}, run {found['tuned_run_id']}); {comparison['fixed_count']} fixed, "
            f"{comparison['broken_count']} broken, exact McNemar p = {comparison['mcnemar_p']:.2g}"
        )
        print(self.source.verdict_line.format(base=base, tuned=tuned, verdict=comparison["verdict"]))
        print(f"  {comparison['verdict_reason']}")
        print(f"Report: {out / 'report.json'} and {out / 'report.html'}")
        return comparison

    def reinforce(self, cloud: Any, api: Api, environment_id: str, base_url: str) -> None:
        """The reinforcement method's steps: its package, then GRPO from the base model and from the SFT
        checkpoint, each evaluated on the held-out cases beside the model it started from."""
        legs: dict[str, dict[str, Any]] = {}
        self.found["reinforcement"] = legs
        self.timed("reinforcement_package_s", lambda: self.package_reinforcement(api, environment_id))
        starts = {
            GRPO: (self.source.model, self.found["base_run_id"]),
            SFT_GRPO: (self.found["result_model"], self.found["tuned_run_id"]),
        }
        for number, name in enumerate(self.source.reinforcement_legs, start=7):
            start, compared_with = starts[name]
            legs[name] = {"base_model": start, "compared_with_run_id": compared_with}
            self.step(number, f"GRPO from {start} on the reinforcement package, and its evaluation")
            self.grpo_leg(cloud, api, name, legs[name], base_url)

    def grpo_leg(self, cloud: Any, api: Api, name: str, leg: dict[str, Any], base_url: str) -> None:
        """GRPO from the leg's model, timed, then its evaluation beside the run it is compared with."""
        self.timed(f"{name}_training_s", lambda: self.train_grpo(api, leg["base_model"], leg, base_url))
        self.timed(f"{name}_evaluation_s", lambda: self.evaluate_leg(cloud, api, name, leg))

    def package_reinforcement(self, api: Api, environment_id: str) -> None:
        self.step(6, f"a reinforcement preparation of the same run and an {REINFORCEMENT_PROFILE} package")
        settings = {**(self.source.preparation_settings or {}), **(self.source.reinforcement_settings or {})}
        preparation = prepare(
            api, environment_id, self.found["base_run_id"], self.progress, settings, method="reinforcement"
        )
        self.found["reinforcement_preparation_id"] = preparation["preparation_id"]
        if preparation["status"] != "Ready":
            raise RuntimeError(f"the reinforcement preparation failed: {preparation['failure_reason']}")
        detail = api.expect("GET", f"/preparations/{preparation['preparation_id']}", 200)
        self.found["reinforcement_splits"] = detail["splits"]
        built = package_of(api, preparation["preparation_id"], self.progress, REINFORCEMENT_PROFILE)
        self.found["reinforcement_package_id"] = built["package_id"]
        self.found["reinforcement_package_sha256"] = built["sha256"]
        if built["status"] != "Ready":
            raise RuntimeError(
                f"the {REINFORCEMENT_PROFILE} package was {built['status']}: {built['reason']}"
            )

    def train_grpo(self, api: Api, start: str, leg: dict[str, Any], base_url: str) -> None:
        """GRPO from ``start``; the job's progress, read from the server, gives the reward curve, and the
        rollouts and completion tokens a second of its last logged step."""
        package_id = self.found["reinforcement_package_id"]
        training = {**(self.source.reinforcement or {}), "base_model": start}
        self.launch(api, package_id, training, f"loop-{package_id}-{start}", leg)
        run = api.expect("GET", f"/training-runs/{leg['training_run_id']}", 200)
        leg["method"] = run.get("method")
        leg["recorded_base_model"] = run.get("base_model")
        progress = server_job(base_url, str(leg["provider_job_id"])).get("progress") or {}
        leg["steps"] = progress.get("step")
        leg["reward_curve"] = progress.get("reward_curve") or []
        leg["rollouts_per_s"] = progress.get("rollouts_per_s")
        leg["completion_tokens_per_s"] = progress.get("completion_tokens_per_s")

    def evaluate_leg(self, cloud: Any, api: Api, name: str, leg: dict[str, Any]) -> None:
        tuned = str(leg["result_model"])
        self.evaluation(cloud, api, tuned, leg["compared_with_run_id"], leg)
        comparison = self.compare(cloud, api, tuned, leg["base_model"], leg, self.out / name)
        leg["comparison"] |= {key: comparison[key] for key in ANSWER_RATES}

    def summary(self) -> dict[str, Any]:
        return {**self.source.summary(self), "stopped": self.stopped}

    def kept(self, keys: tuple[str, ...]) -> dict[str, Any]:
        """What the loop found under ``keys`` (None where it did not get that far)."""
        return {key: self.found.get(key) for key in keys}


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


def server_job(base_url: str, job_id: str) -> dict[str, Any]:
    """The model server's view of a fine-tuning job (its progress among it), read as any client would."""
    request = urllib.request.Request(f"{base_url}/fine-tunes/{job_id}")  # noqa: S310 - the loop's server
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - an http URL, as above
        found: dict[str, Any] = json.loads(answer.read())
    return found


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


def follow_live_run(cloud: Any, api: Api, run_id: str, progress: Progress, timeout: float) -> str:
    """The run's statuses until it ends, and while the model answers, how many inference shards are done."""
    from benchgen.bucket_layout import run_key

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
        time.sleep(1)
    raise TimeoutError(f"run {run_id} was still {seen} after {timeout:.0f}s")


def _metrics(metrics: dict[str, Any]) -> str:
    return ", ".join(
        f"{key} {value:.1%}" if isinstance(value, float) else f"{key} {value}"
        for key, value in metrics.items()
    )
