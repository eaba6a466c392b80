"""What one run reads, counted on the local cloud over the real handlers and state machines: every AWS
call a function makes is counted by the function, so a fact a step already holds would be seen if it
were fetched again. Each step reads its run and its environment version once and hands them on.

One run of an example environment, uploaded straight to the bucket: ingest, score, and the artifact
pipeline's BuildArtifact; of gsm8k-tr, which has a finetune section, and of custom-program, which has
none.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import botocore.client
import pytest

from benchgen.aws.storage import ObjectStore
from benchgen.bucket_layout import execution_name
from examplegen.writing import write_bundle_zip
from localcloud.callers import running_service
from localcloud.cloud import LocalCloud

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RUN_STEPS = ("ingest", "score", "build_artifact")
OPERATOR = "operator"
# Which steps open the environment from its bundle: BuildArtifact only when there is an artifact to build.
OPENS_THE_BUNDLE = {
    "gsm8k-tr": RUN_STEPS,
    "custom-program": ("ingest", "score"),
}

Calls = Counter[tuple[str, str, str]]


def _bundle_key(example: str) -> str:
    return f"environments/{example}/v1/bundle.zip"


def count_calls_by_function(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """From now on (until ``monkeypatch`` undoes it): every AWS call, as (function, operation, object key or
    table), and every object a function downloads, as (function, "download", key). A download's own
    requests run on the transfer manager's threads, which run as the function that started them; calls
    outside every function (the test's own) count under "operator"."""
    counts: Calls = Counter()
    lock = threading.Lock()
    call, download = botocore.client.BaseClient._make_api_call, ObjectStore.download

    def count(service: str | None, operation: str, target: object) -> None:
        with lock:
            counts[(service or OPERATOR, operation, str(target))] += 1

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


@dataclass(frozen=True)
class OneRun:
    example: str
    calls: Calls
    tables: dict[str, str]

    def count(self, step: str, operation: str, target: str) -> int:
        return self.calls[(step, operation, target)]


@pytest.fixture(scope="module", params=list(OPENS_THE_BUNDLE))
def one_run(
    request: pytest.FixtureRequest,
    stack_templates: dict[str, dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> OneRun:
    """The calls of one whole run of the example (not of the registration before it)."""
    example: str = request.param
    bundle = write_bundle_zip(EXAMPLES / example / "bundle", tmp_path_factory.mktemp("work") / "bundle.zip")
    with pytest.MonkeyPatch.context() as monkeypatch, LocalCloud(stack_templates) as cloud:
        # A profile or an endpoint from the developer's shell would change what the cloud does.
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
            monkeypatch.delenv(name, raising=False)
        s3 = cloud.client("s3")
        s3.put_object(Bucket=cloud.bucket, Key=_bundle_key(example), Body=bundle.read_bytes())
        cloud.settle()
        calls = count_calls_by_function(monkeypatch)
        s3.put_object(
            Bucket=cloud.bucket,
            Key="submissions/run-work/predictions.json",
            Body=(EXAMPLES / example / "submission" / "predictions.json").read_bytes(),
            Metadata={"environment": example, "version": "v1", "model": "Qwen2.5-7B-LoRA"},
        )
        cloud.settle()
        assert cloud.wait_for_execution(execution_name("run-work"))["status"] == "SUCCEEDED"
        tables = {
            name: next(
                table for logical_id, table in cloud.table_names.items() if logical_id.startswith(name)
            )
            for name in ("Runs", "Environments")
        }
    return OneRun(example, calls, tables)


@pytest.mark.parametrize("step", RUN_STEPS)
def test_each_step_reads_the_environment_version_once(one_run: OneRun, step: str) -> None:
    assert one_run.count(step, "GetItem", one_run.tables["Environments"]) == 1


@pytest.mark.parametrize("step", RUN_STEPS)
def test_each_step_reads_the_run_once(one_run: OneRun, step: str) -> None:
    assert one_run.count(step, "GetItem", one_run.tables["Runs"]) == 1


def test_the_bundle_is_downloaded_once_by_each_step_that_opens_the_environment(one_run: OneRun) -> None:
    # Ingest, score and BuildArtifact are three functions: each that opens the environment downloads the
    # bundle once (the version registration validated), one GetObject of the bundle's key. BuildArtifact
    # of an environment without a finetune section answers from the version's record alone.
    key = _bundle_key(one_run.example)
    opens = OPENS_THE_BUNDLE[one_run.example]
    assert {step: one_run.count(step, "download", key) for step in RUN_STEPS} == {
        step: int(step in opens) for step in RUN_STEPS
    }
    assert {step: one_run.count(step, "GetObject", key) for step in RUN_STEPS} == {
        step: int(step in opens) for step in RUN_STEPS
    }
