"""`benchgen demo` (without ``--loop``): the whole pipeline on the local cloud, on an example environment the
project ships; and the steps the loop (``cli.loop``) walks through as well.

It drives the application the way a user would: through the REST API (with a Cognito ID token) and S3
uploads, then follows the run through ingest, score and the artifact state machine, prepares training
material from the run and asks for an exact package of it.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from benchgen.outputs import RunOutput
from cli.api_client import Api
from cli.gap_reasons import WrongCases
from cli.local import DEMO_USER, console_for, demo_password

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ENVIRONMENT_VERSION = "v1"
FINAL = ("Completed", "Failed")
PACKAGE_PROFILE = "openai-chat"


class Progress:
    """Timestamped lines, one per step, as the run moves."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def step(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:5.1f}s] {text}", flush=True)


def run_demo(args: argparse.Namespace) -> int:
    from localcloud.cloud import LocalCloud

    example = EXAMPLES / args.example
    submission = next(iter(sorted((example / "submission").glob("predictions.*"))), None)
    if not (example / "bundle" / "competition.yaml").is_file() or submission is None:
        print(
            f"no example environment at {example}: run from a checkout, or pick one of {examples_available()}"
        )
        return 2
    out: Path = args.out or Path("out/demo")
    out.mkdir(parents=True, exist_ok=True)
    # The handlers' structured logs and metrics are for CloudWatch; here the progress lines tell the story.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    progress = Progress()
    progress.step("starting the local cloud (synthesizing the CDK app, creating its resources)")
    with LocalCloud() as cloud:
        progress.step(
            f"local cloud up: synthesis {cloud.timings['synthesis_s']:.1f}s, "
            f"resources {cloud.timings['resources_s']:.1f}s, bucket {cloud.bucket}"
        )
        token = cloud.create_user(DEMO_USER, demo_password())
        with cloud.serve_api(access_log=False) as server, console_for(cloud, server) as console:
            api = Api(server.url, token)
            progress.step(f"REST API on {server.url}, signed in as {DEMO_USER}")
            progress.step(f"web console while the demo runs: {console}")
            summary = _drive(cloud, api, example, submission, args.model, out, progress)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    progress.step(f"wrote {out / 'summary.json'}")
    packaged = summary["package"] is not None and summary["package"]["status"] == "Ready"
    return 0 if summary["status"] == "Completed" and packaged else 1


def examples_available() -> str:
    return (
        ", ".join(sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())) if EXAMPLES.is_dir() else "none"
    )


def _drive(
    cloud: Any, api: Api, example: Path, submission: Path, model: str, out: Path, progress: Progress
) -> dict[str, Any]:
    s3 = cloud.client("s3")
    environment_id = register_example(cloud, api, example, out, progress)
    sampling = {"sampling": {"temperature": 0.0, "max_tokens": 512}}
    run_id, status = submit(cloud, api, environment_id, submission, model, progress, run_config=sampling)
    execution = follow_execution(cloud, run_id, progress) if status == "Completed" else None

    details = api.expect("GET", f"/runs/{run_id}", 200)
    _print_breakdown(details)
    files = api.expect("GET", f"/runs/{run_id}/files", 200)["files"]
    print("Files:")
    for file in files:
        print(f"  {file['label']:<26} {file['key']}  ({file['size']} bytes)")
        target = out / Path(file["key"]).name
        s3.download_file(cloud.bucket, file["key"], str(target))
    dataset = None
    if details.get("dataset_id"):
        dataset = api.expect("GET", f"/datasets/{details['dataset_id']}", 200)
        print(f"Saved dataset: {dataset['name']} ({dataset['example_count']} examples)")
    elif details.get("artifact_reason"):
        print(f"No dataset: {details['artifact_reason']}")
    preparation = package = None
    if details["status"] == "Completed":
        wrong = WrongCases.of_run(example_cases(example), out / RunOutput.DETAILED_JSON.file_name)
        preparation = prepare(api, environment_id, run_id, progress, wrong_cases=wrong)
        if preparation["status"] == "Ready":
            package = package_of(api, preparation["preparation_id"], progress)
            if package["status"] == "Ready":
                s3.download_file(
                    cloud.bucket, package["package_key"], str(out / Path(package["package_key"]).name)
                )
    keys = sorted(item["Key"] for item in s3.list_objects_v2(Bucket=cloud.bucket).get("Contents", []))
    return {
        "run_id": run_id,
        "status": details["status"],
        "failure_reason": details.get("failure_reason"),
        "overall_score": details.get("overall_score"),
        "metrics": {tile["key"]: tile["value"] for tile in details["metrics"]},
        "dataset_id": dataset["dataset_id"] if dataset else None,
        "dataset_name": dataset["name"] if dataset else None,
        "execution_status": execution,
        "preparation": preparation,
        "package": package,
        "s3_keys": keys,
    }


def submit(
    cloud: Any,
    api: Api,
    environment_id: str,
    submission: Path,
    model: str,
    progress: Progress,
    run_config: dict[str, Any] | None = None,
    timeout: float = 120.0,
) -> tuple[str, str]:
    """A run of the environment for ``submission``'s answers (by ``model``), uploaded while the run is
    followed until it ends (up to ``timeout`` seconds); its id and final status."""
    run = api.expect(
        "POST",
        "/runs",
        201,
        {
            "environment_id": environment_id,
            "version": ENVIRONMENT_VERSION,
            "model": model,
            "filename": submission.name,
            **({"run_config": run_config} if run_config else {}),
        },
    )
    run_id = str(run["run"]["run_id"])
    progress.step(f"run {run_id} created: {run['run']['status']}; uploading {submission.name}")
    uploader = threading.Thread(
        target=cloud.client("s3").put_object,
        kwargs={"Bucket": cloud.bucket, "Key": run["upload_key"], "Body": submission.read_bytes()},
    )
    uploader.start()
    status = follow_run(api, run_id, progress, timeout)
    uploader.join()
    return run_id, status


def example_cases(example: Path) -> Path:
    """The example bundle's reference cases (their criteria)."""
    return example / "bundle" / "reference" / "cases.jsonl"


def register_example(
    cloud: Any, api: Api, example: Path, out: Path, progress: Progress, timeout: float = 60.0
) -> str:
    """Publish the example's bundle through the API and an upload, and wait until it is registered (up to
    ``timeout`` seconds: more where a real judge is asked about its labelled answers)."""
    from examplegen.writing import write_bundle_zip

    environment_id = example.name
    upload = api.expect(
        "POST", "/environments", 201, {"environment_id": environment_id, "version": ENVIRONMENT_VERSION}
    )
    bundle = write_bundle_zip(example / "bundle", out / "bundle.zip")
    put_bundle(cloud, upload, bundle.read_bytes())
    environment = _follow_registration(api, environment_id, timeout)
    progress.step(f"environment {environment_id} {ENVIRONMENT_VERSION}: {environment['status']}")
    if environment["status"] != "Registered":
        raise RuntimeError(f"the example bundle was rejected: {environment['problems']}")
    return environment_id


def put_bundle(cloud: Any, upload: dict[str, Any], body: bytes) -> None:
    """Upload a bundle to the key ``POST /environments`` named, with the ``x-amz-meta-`` headers it said to
    send: they are signed into its upload URL, and registration reads the publisher from them (an
    unstamped upload is an operator's, and its judge could not be reached through the user's connection).
    In-process no server answers that URL, so the object is put directly, with what the URL requires."""
    prefix = "x-amz-meta-"
    metadata = {name.removeprefix(prefix): value for name, value in upload["upload_headers"].items()}
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=upload["bundle_key"], Body=body, Metadata=metadata)


def prepare(
    api: Api,
    environment_id: str,
    run_id: str,
    progress: Progress,
    settings: dict[str, Any] | None = None,
    wrong_cases: WrongCases | None = None,
    method: str = "demonstration",
) -> dict[str, Any]:
    """A preparation of the run by ``method`` (demonstration unless said), with generation ``settings`` (the
    bundle's by default), followed until it is generated, and its coverage gaps; with the example's
    ``wrong_cases``, each gap its size explains is printed with that reason."""
    created = api.expect(
        "POST",
        "/preparations",
        201,
        {
            "environment_id": environment_id,
            "environment_version": ENVIRONMENT_VERSION,
            "method": method,
            "run_ids": [run_id],
            **({"settings": settings} if settings else {}),
        },
    )
    preparation_id = created["preparation_id"]
    progress.step(f"preparation {preparation_id} created: {created['status']}")
    found = follow(api, f"/preparations/{preparation_id}", "Generating", progress, "preparation")
    summary: dict[str, Any] = {
        "preparation_id": preparation_id,
        "status": found["status"],
        "state_hash": found.get("state_hash"),
        "example_count": found.get("example_count"),
        "failure_reason": found.get("failure_reason"),
        "coverage_gaps": [],
        "coverage_gap_reasons": [],
    }
    if found["status"] == "Ready":
        gaps = api.expect("GET", f"/preparations/{preparation_id}/coverage", 200)["gaps"]
        summary["coverage_gaps"] = [gap["message"] for gap in gaps]
        reasons = [wrong_cases.reason(gap) if wrong_cases else None for gap in gaps]
        summary["coverage_gap_reasons"] = reasons
        print(f"Preparation {preparation_id}: {found['example_count']} examples, state {found['state_hash']}")
        for message, reason in zip(summary["coverage_gaps"], reasons, strict=True):
            print(f"  gap: {message}")
            if reason:
                print(f"       ({reason})")
    else:
        print(f"Preparation {preparation_id} failed: {found.get('failure_reason')}")
    return summary


def package_of(
    api: Api, preparation_id: str, progress: Progress, profile: str = PACKAGE_PROFILE
) -> dict[str, Any]:
    """The preparation's package in ``profile``, followed until it is built (or refused)."""
    created = api.expect("POST", f"/preparations/{preparation_id}/packages", 202, {"profile": profile})
    package_id = created["package_id"]
    progress.step(f"package {package_id} ({profile}) requested: {created['status']}")
    found = follow(api, f"/packages/{package_id}", "Building", progress, "package")
    if found["status"] == "Ready":
        print(f"Package {package_id}: {found['size']} bytes, sha256 {found['sha256']}")
    else:
        print(f"Package {package_id} {found['status']}: {found.get('reason')}")
    return {
        "package_id": package_id,
        "profile": profile,
        "status": found["status"],
        "sha256": found.get("sha256"),
        "size": found.get("size"),
        "reason": found.get("reason"),
        "package_key": found["package_key"],
    }


def follow(
    api: Api, path: str, busy: str, progress: Progress, what: str, timeout: float = 60.0
) -> dict[str, Any]:
    """``GET path`` until its status leaves ``busy``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = api.expect("GET", path, 200)
        if found["status"] != busy:
            progress.step(f"{what} {found['status']}")
            return dict(found)
        time.sleep(0.05)
    raise TimeoutError(f"the {what} at {path} was still {busy} after {timeout:.0f}s")


def _follow_registration(api: Api, environment_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """The environment's record, once the (asynchronous) registration has written it and its judge's
    calibration, if any, is no longer running (its CalibrationPipeline measures it after registration)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for environment in api.expect("GET", "/environments", 200)["items"]:
            calibration = environment.get("judge_calibration") or {}
            if environment["environment_id"] == environment_id and calibration.get("status") != "running":
                return dict(environment)
        time.sleep(0.05)
    raise TimeoutError(f"environment {environment_id} was not registered within {timeout:.0f}s")


def follow_run(api: Api, run_id: str, progress: Progress, timeout: float = 120.0) -> str:
    seen = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = api.expect("GET", f"/runs/{run_id}", 200)["status"]
        if status != seen:
            progress.step(f"run {status}")
            seen = status
        if status in FINAL:
            return str(status)
        time.sleep(0.05)
    raise TimeoutError(f"run {run_id} did not finish within {timeout:.0f}s")


def follow_execution(cloud: Any, run_id: str, progress: Progress) -> str:
    from benchgen.bucket_layout import execution_name

    name = execution_name(run_id)
    described = cloud.wait_for_execution(name, timeout=60)
    history = cloud.client("stepfunctions").get_execution_history(executionArn=described["executionArn"])
    for event in history["events"]:
        entered = event.get("stateEnteredEventDetails")
        if entered:
            progress.step(f"state machine: {entered['name']}")
    progress.step(f"state machine execution {name}: {described['status']}")
    return str(described["status"])


def _print_breakdown(details: dict[str, Any]) -> None:
    print(f"\nRun {details['run_id']}: {details['status']}  (model {details['model']})")
    if details.get("failure_reason"):
        print(f"  reason: {details['failure_reason']}")
    for tile in details["metrics"]:
        print(f"  {tile['title']:<24} {tile['value']}")
    for field, values in (details.get("breakdowns") or {}).items():
        print(f"  by {field}:")
        for value, stats in values.items():
            if {"passed", "total", "rate"} <= stats.keys():
                shown = f"{int(stats['passed']):>5}/{int(stats['total']):<5} {stats['rate']:.1%}"
            else:
                shown = "  ".join(f"{name} {number:g}" for name, number in sorted(stats.items()))
            print(f"    {value:<20} {shown}")
