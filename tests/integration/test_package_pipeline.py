"""The package state machine on the local cloud, started as the API starts it: build, record, announce.

Real build_package handler, the definition synthesized from the CDK app and executed by moto.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.executions import ExecutionStarter
from benchgen.aws.tables.packages import PackagesRepo
from benchgen.bucket_layout import package_key, preparation_key
from benchgen.finetune.seed import Source
from benchgen.finetune.split import Split
from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.settings import load_settings
from benchgen.steps.package import PackageInput
from benchgen.steps.prepare import BundleRef
from benchgen.training.examples import (
    EXAMPLES_NAME,
    HELD_OUT_NAME,
    HeldOutCase,
    Kind,
    PreparedExample,
    SourceContext,
    text_hash,
)
from benchgen.training.package import PreparationInfo, package_id
from benchgen.vocabulary import Method
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud

STATE_HASH = "5" * 64
PREPARATION_ID = "prep-1"
BUNDLE_KEY = "environments/gsm8k-tr/v1/bundle.zip"


def question(number: int) -> str:
    return f"A basket holds {number} apples and {number} pears. How many fruits are in it?"


def write_bundle(cloud: LocalCloud, numbers: list[int]) -> None:
    """The registered bundle of the environment whose cases ``case-<number>`` the preparation drew from."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bundle"
        (folder / "reference").mkdir(parents=True)
        cases = [{"id": f"case-{n}", "question": question(n), "answer": str(2 * n)} for n in numbers]
        (folder / "reference" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
        (folder / "competition.yaml").write_text(
            "version: 2\ntitle: GSM8K-TR\ntemplate: math\n"
            "tasks:\n  - index: 0\n    reference_data: reference\n"
            "phases:\n  - index: 0\n    tasks: [0]\n"
            "leaderboards:\n  - columns:\n      - {title: Accuracy, key: accuracy, index: 0}\n"
        )
        body = write_bundle_zip(folder, Path(tmp) / "bundle.zip").read_bytes()
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=BUNDLE_KEY, Body=body)


def example(number: int, split: Split) -> PreparedExample:
    question_text = question(number)
    return PreparedExample(
        example_id=f"case-{number}-0",
        split=split,
        kind=Kind.SEED,
        prompt=question_text,
        chosen=f"{number} + {number} = {2 * number}. The answer is {2 * number}.",
        source=SourceContext(case_id=f"case-{number}", run_id="run-1", layer=Source.SEED),
        source_text_hash=text_hash(question_text),
    )


def write_preparation(cloud: LocalCloud, train_rows: int) -> None:
    """A preparation's files: ``train_rows`` training rows, two validation rows and one held-out case."""
    held_out = example(900, Split.TEST)
    examples = [example(n, Split.TRAIN) for n in range(train_rows)]
    examples += [example(500 + n, Split.VALIDATION) for n in range(2)] + [held_out]
    files = {
        EXAMPLES_NAME: "".join(item.model_dump_json() + "\n" for item in examples),
        HELD_OUT_NAME: HeldOutCase(case_id="case-900", text_hash=held_out.source_text_hash).model_dump_json()
        + "\n",
    }
    for name, text in files.items():
        cloud.client("s3").put_object(
            Bucket=cloud.bucket, Key=preparation_key(PREPARATION_ID, name), Body=text.encode()
        )
    write_bundle(cloud, [*range(train_rows), 500, 501, 900])


def start_package(cloud: LocalCloud, profile: str) -> tuple[str, dict[str, Any]]:
    """Record a package Building and start its execution, as POST /preparations/{id}/packages does."""
    pid = package_id(STATE_HASH, profile)
    PackagesRepo(load_settings().packages_table).put_if_absent(
        PackageRecord(
            package_id=pid,
            preparation_id=PREPARATION_ID,
            owner="user-a",
            profile=profile,
            state_hash=STATE_HASH,
            package_key=package_key(pid),
        )
    )
    task = PackageInput(
        package_id=pid,
        preparation_id=PREPARATION_ID,
        profile=profile,
        preparation=PreparationInfo(
            state_hash=STATE_HASH,
            method=Method.DEMONSTRATION,
            environment_id="gsm8k-tr",
            environment_version="v1",
            benchmark="GSM8K-TR",
            base_model="Qwen2.5-7B-LoRA",
            suggested_hyperparams={"epochs": 3},
            spec={},
        ),
        bundle=BundleRef(key=BUNDLE_KEY),
    )
    machine = cloud.state_machine_arns["PackagePipeline"]
    cloud.client("stepfunctions").start_execution(
        stateMachineArn=machine, name=pid, input=json.dumps(task.model_dump(mode="json"))
    )
    return pid, cloud.wait_for_execution(pid, state_machine_arn=machine)


def stored(pid: str) -> PackageRecord:
    record = PackagesRepo(load_settings().packages_table).get(pid)
    assert record is not None
    return record


def test_a_built_package_is_recorded_ready_with_the_digest_of_the_stored_zip(cloud: LocalCloud) -> None:
    # given a preparation of twelve training rows
    write_preparation(cloud, train_rows=12)

    # when its openai-chat package is built
    pid, execution = start_package(cloud, "openai-chat")

    # then the execution succeeded and the record holds what the zip in the bucket is
    package = stored(pid)
    assert execution["status"] == "SUCCEEDED", package.reason
    body = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=f"packages/{pid}.zip")["Body"].read()
    assert package.status is PackageStatus.READY
    assert package.sha256 == hashlib.sha256(body).hexdigest()
    assert package.size == len(body)
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        train = archive.read("train.jsonl")
        manifest = json.loads(archive.read("manifest.json"))
    assert package.files["train.jsonl"].rows == 12
    assert package.files["train.jsonl"].sha256 == hashlib.sha256(train).hexdigest()
    assert (manifest["package_id"], manifest["preparation"]["state_hash"]) == (pid, STATE_HASH)


def test_a_profile_that_refuses_the_preparation_is_recorded_refused_with_its_message(
    cloud: LocalCloud,
) -> None:
    # given a preparation of only three training rows
    write_preparation(cloud, train_rows=3)

    # when a Bedrock Nova package (at least eight training rows) is built
    pid, execution = start_package(cloud, "bedrock-conversation")

    # then the refusal is the package's answer, not a failed execution, and no zip was written
    assert execution["status"] == "SUCCEEDED"
    package = stored(pid)
    assert package.status is PackageStatus.REFUSED
    assert package.reason is not None
    assert package.reason.startswith(
        "profile bedrock-conversation needs at least 8 train rows and this preparation gives 3: "
    )
    listed = cloud.client("s3").list_objects_v2(Bucket=cloud.bucket, Prefix="packages/")
    assert listed.get("KeyCount", 0) == 0


def test_a_build_that_cannot_read_the_preparation_is_recorded_failed_with_a_sentence(
    cloud: LocalCloud,
) -> None:
    # given no preparation files at all
    # when a package is built
    pid, execution = start_package(cloud, "trl-sft")

    # then the execution failed and the package says which file was missing
    assert execution["status"] == "FAILED"
    package = stored(pid)
    assert package.status is PackageStatus.FAILED
    assert (
        package.reason
        == f"{preparation_key(PREPARATION_ID, EXAMPLES_NAME)} is not in the bucket {cloud.bucket}"
    )


@pytest.mark.parametrize("status", [PackageStatus.READY, PackageStatus.REFUSED])
def test_a_recorded_package_is_never_rewritten_by_a_later_build(
    cloud: LocalCloud, status: PackageStatus
) -> None:
    # given a package already recorded Ready (or Refused)
    write_preparation(cloud, train_rows=12)
    pid = package_id(STATE_HASH, "openai-chat")
    repo = PackagesRepo(load_settings().packages_table)
    repo.put_if_absent(
        PackageRecord(
            package_id=pid,
            preparation_id=PREPARATION_ID,
            owner="user-a",
            profile="openai-chat",
            state_hash=STATE_HASH,
            package_key=package_key(pid),
            status=status,
            reason="recorded first",
        )
    )

    # when a build for it runs to the end
    _, execution = start_package(cloud, "openai-chat")

    # then the record keeps what it had
    assert execution["status"] == "FAILED"
    package = stored(pid)
    assert (package.status, package.reason, package.sha256) == (status, "recorded first", None)


def test_a_finished_package_cannot_be_started_again_under_its_name(cloud: LocalCloud) -> None:
    # given a package built to the end
    write_preparation(cloud, train_rows=12)
    pid, _ = start_package(cloud, "trl-sft")
    machine = cloud.state_machine_arns["PackagePipeline"]
    described = cloud.client("stepfunctions").describe_execution(
        executionArn=cloud.execution_arn(pid, machine)
    )

    # when its execution is started again, with the very same input
    started = ExecutionStarter(machine).start_once(pid, json.loads(described["input"]))

    # then Step Functions refuses the name (as AWS does for an ended execution), and there is one execution
    assert started is False
    listed = cloud.client("stepfunctions").list_executions(stateMachineArn=machine)["executions"]
    assert [execution["name"] for execution in listed] == [pid]
