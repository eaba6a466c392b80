"""What one run reads, counted on the local cloud over the real handlers and state machines: every AWS
call a function makes is counted by the function, so a fact a step already holds would be seen if it
were fetched again. Each step reads its run and its environment version once and hands them on.

One run of the example gsm8k-tr environment, uploaded straight to the bucket: ingest, score, and the
artifact pipeline's BuildArtifact.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import botocore.client
import pytest

from benchgen.aws.storage import ObjectStore
from benchgen.steps.keys import execution_name
from infra.examplegen.writing import write_bundle_zip
from infra.local.cloud import LocalCloud
from infra.local.function_logs import running_service

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE = "gsm8k-tr"
BUNDLE_KEY = f"environments/{EXAMPLE}/v1/bundle.zip"
RUN_STEPS = ("ingest", "score", "build_artifact")
TRANSFER = "transfer"

Calls = Counter[tuple[str, str, str]]


def count_calls_by_function(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """From now on (until ``monkeypatch`` undoes it): every AWS call, as (function, operation, object key or
    table), and every object a function downloads, as (function, "download", key). A download's own
    requests run on the transfer manager's threads, outside the function's: they count under "transfer"."""
    counts: Calls = Counter()
    lock = threading.Lock()
    call, download = botocore.client.BaseClient._make_api_call, ObjectStore.download

    def count(service: str | None, operation: str, target: object) -> None:
        with lock:
            counts[(service or TRANSFER, operation, str(target))] += 1

    def counted_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
        key = params.get("Key")
        count(running_service(), operation, key if isinstance(key, str) else params.get("TableName"))
        return call(client, operation, params)

    def counted_download(store: ObjectStore, key: str, path: Path, *, version_id: str | None = None) -> Path:
        count(running_service(), "download", key)
        return download(store, key, path, version_id=version_id)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", counted_call)
    monkeypatch.setattr(ObjectStore, "download", counted_download)
    return counts


@pytest.fixture(scope="module")
def run_calls(
    stack_template: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Calls, dict[str, str]]:
    """The calls of one whole run (not of the registration before it), and the tables' names."""
    root = tmp_path_factory.mktemp("work")
    bundle = write_bundle_zip(EXAMPLES / EXAMPLE / "bundle", root / "bundle.zip")
    with pytest.MonkeyPatch.context() as monkeypatch, LocalCloud(stack_template) as cloud:
        # A profile or an endpoint from the developer's shell would change what the cloud does.
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
            monkeypatch.delenv(name, raising=False)
        s3 = cloud.client("s3")
        s3.put_object(Bucket=cloud.bucket, Key=BUNDLE_KEY, Body=bundle.read_bytes())
        cloud.settle()
        counts = count_calls_by_function(monkeypatch)
        s3.put_object(
            Bucket=cloud.bucket,
            Key="submissions/run-work/predictions.json",
            Body=(EXAMPLES / EXAMPLE / "submission" / "predictions.json").read_bytes(),
            Metadata={"environment": EXAMPLE, "version": "v1", "model": "Qwen2.5-7B-LoRA"},
        )
        cloud.settle()
        assert cloud.wait_for_execution(execution_name("run-work"))["status"] == "SUCCEEDED"
        tables = {
            name: next(
                table for logical_id, table in cloud.table_names.items() if logical_id.startswith(name)
            )
            for name in ("Runs", "Environments")
        }
    return counts, tables


def _reads(calls: Calls, step: str, operation: str, target: str) -> int:
    return calls[(step, operation, target)]


@pytest.mark.parametrize("step", RUN_STEPS)
def test_each_step_reads_the_environment_version_once(
    run_calls: tuple[Calls, dict[str, str]], step: str
) -> None:
    calls, tables = run_calls
    assert _reads(calls, step, "GetItem", tables["Environments"]) == 1


@pytest.mark.parametrize("step", RUN_STEPS)
def test_each_step_reads_the_run_once(run_calls: tuple[Calls, dict[str, str]], step: str) -> None:
    calls, tables = run_calls
    assert _reads(calls, step, "GetItem", tables["Runs"]) == 1


def test_the_bundle_is_downloaded_once_by_each_step_that_opens_the_environment(
    run_calls: tuple[Calls, dict[str, str]],
) -> None:
    # Ingest, score and BuildArtifact are three functions: each opens the environment from the bundle once
    # (the version registration validated), as a GetObject of the bundle's key each.
    calls, _ = run_calls
    assert {step: _reads(calls, step, "download", BUNDLE_KEY) for step in RUN_STEPS} == dict.fromkeys(
        RUN_STEPS, 1
    )
    assert _reads(calls, TRANSFER, "GetObject", BUNDLE_KEY) == len(RUN_STEPS)
