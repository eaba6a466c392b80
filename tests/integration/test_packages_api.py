"""Packages through the REST API on the local cloud, as a trainer asks for them.

One cloud for the module: a user registers the Turkish math example, runs a submission through the real
pipeline, and prepares it twice (demonstration and preference) through the real preparation state machine.
Each test then requests packages of its own profile, so the tests do not depend on each other's packages.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from benchgen.aws.tables.packages import PackagesRepo
from benchgen.aws.tables.preparations import PreparationsRepo
from benchgen.bucket_layout import package_execution_name, package_key
from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.settings import load_settings
from benchgen.training.package import package_id
from cli.api_client import Api
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from tests.integration.factories import EXAMPLES, example_submission, received_events, watch_events

EXAMPLE = "gsm8k-tr"
VERSION = "v1"
PACKAGE_PIPELINE = "PackagePipeline"


@dataclass
class World:
    cloud: LocalCloud
    owner: Api
    stranger: Api
    owner_id: str
    run_id: str
    demonstration: dict[str, Any]
    preference: dict[str, Any]
    events: str

    def wait_for_package(self, package: str, attempt: int = 1) -> dict[str, Any]:
        machine = self.cloud.state_machine_arns[PACKAGE_PIPELINE]
        name = package_execution_name(package, attempt)
        return self.cloud.wait_for_execution(name, timeout=60, state_machine_arn=machine)

    def executions(self) -> list[str]:
        listed = self.cloud.client("stepfunctions").list_executions(
            stateMachineArn=self.cloud.state_machine_arns[PACKAGE_PIPELINE]
        )
        return [execution["name"] for execution in listed["executions"]]


def _user_id(token: str) -> str:
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["sub"])


def _poll(read: Any, done: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = read()
        if done(found):
            return found
        time.sleep(0.05)
    raise TimeoutError(f"{what} did not happen within {timeout:.0f} s")


def _completed_run(cloud: LocalCloud, api: Api, tmp: Any) -> str:
    upload = api.expect("POST", "/environments", 201, {"environment_id": EXAMPLE, "version": VERSION})
    bundle = write_bundle_zip(EXAMPLES / EXAMPLE / "bundle", tmp / "bundle.zip")
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=upload["bundle_key"], Body=bundle.read_bytes())
    cloud.settle()
    submission = example_submission(EXAMPLE)
    created = api.expect(
        "POST",
        "/runs",
        201,
        {
            "environment_id": EXAMPLE,
            "version": VERSION,
            "model": "Qwen2.5-7B-LoRA",
            "filename": submission.name,
        },
    )
    cloud.client("s3").put_object(
        Bucket=cloud.bucket, Key=created["upload_key"], Body=submission.read_bytes()
    )
    cloud.settle()
    run = api.expect("GET", f"/runs/{created['run']['run_id']}", 200)
    assert run["status"] == "Completed", run
    return str(run["run_id"])


def _ready_preparation(api: Api, run_id: str, method: str) -> dict[str, Any]:
    created = api.expect(
        "POST",
        "/preparations",
        201,
        {"environment_id": EXAMPLE, "environment_version": VERSION, "method": method, "run_ids": [run_id]},
    )
    path = f"/preparations/{created['preparation_id']}"
    found = _poll(
        lambda: api.expect("GET", path, 200), lambda p: p["status"] != "Generating", "a preparation"
    )
    assert found["status"] == "Ready", found
    return dict(found)


@pytest.fixture(scope="module")
def world(
    stack_templates: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
            patch.delenv(name, raising=False)
        with LocalCloud(stack_templates) as cloud:
            owner_token = cloud.create_user("trainer@example.com", "Correct-Horse-9-Battery!")
            stranger_token = cloud.create_user("someone@example.com", "Correct-Horse-9-Battery!")
            with cloud.serve_api(access_log=False) as server:
                owner = Api(server.url, owner_token)
                run_id = _completed_run(cloud, owner, tmp_path_factory.mktemp("packages"))
                events = watch_events(cloud)
                yield World(
                    cloud=cloud,
                    owner=owner,
                    stranger=Api(server.url, stranger_token),
                    owner_id=_user_id(owner_token),
                    run_id=run_id,
                    demonstration=_ready_preparation(owner, run_id, "demonstration"),
                    preference=_ready_preparation(owner, run_id, "preference"),
                    events=events,
                )
                cloud.settle()


def test_a_requested_package_is_built_and_downloads_as_the_bytes_its_digest_names(world: World) -> None:
    # given a Ready demonstration preparation
    preparation = world.demonstration["preparation_id"]

    # when its owner asks for an OpenAI chat package
    created = world.owner.expect(
        "POST", f"/preparations/{preparation}/packages", 202, {"profile": "openai-chat"}
    )

    # then the package is being built under the id of this state and profile
    assert created["status"] == "Building"
    assert created["package_id"] == package_id(world.demonstration["state_hash"], "openai-chat")
    assert created["download_url"] is None
    assert world.wait_for_package(created["package_id"])["status"] == "SUCCEEDED"

    # and once built it is Ready, with a five-minute URL whose bytes hash to the recorded digest
    package = world.owner.expect("GET", f"/packages/{created['package_id']}", 200)
    assert package["status"] == "Ready"
    assert package["expires_in"] == 300
    assert parse_qs(urlparse(package["download_url"]).query)["X-Amz-Expires"] == ["300"]
    download = requests.get(package["download_url"], timeout=30)
    assert download.status_code == 200
    assert hashlib.sha256(download.content).hexdigest() == package["sha256"]
    assert len(download.content) == package["size"]
    assert set(package["files"]) == {"train.jsonl", "validation.jsonl", "test.jsonl"}
    assert package["files"]["train.jsonl"]["rows"] == world.demonstration["splits"]["train"]
    # and its contamination report compared every held-out case, read from the registered bundle
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    checked = manifest["contamination"]["held_out_cases_checked"]
    assert checked + manifest["contamination"]["held_out_cases_too_short"] == manifest["held_out"]["count"]
    assert checked == world.demonstration["held_out_count"] > 0
    # and PackageReady went to the bus with the package, its preparation, profile and digest
    announced = [
        detail for kind, detail in received_events(world.cloud, world.events) if kind == "PackageReady"
    ]
    assert {
        "package_id": package["package_id"],
        "preparation_id": preparation,
        "profile": "openai-chat",
        "sha256": package["sha256"],
    } in announced


def test_the_same_request_again_answers_the_same_package_and_starts_nothing(world: World) -> None:
    # given a package requested once and built
    preparation = world.demonstration["preparation_id"]
    first = world.owner.expect("POST", f"/preparations/{preparation}/packages", 202, {"profile": "trl-sft"})
    world.wait_for_package(first["package_id"])

    # when the same request is sent again
    again = world.owner.expect("POST", f"/preparations/{preparation}/packages", 200, {"profile": "trl-sft"})

    # then it answers the package as built, and its one execution is the only one
    assert again["package_id"] == first["package_id"]
    assert again["status"] == "Ready" and again["sha256"]
    assert world.executions().count(first["package_id"]) == 1
    listed = world.owner.expect("GET", f"/preparations/{preparation}/packages", 200)
    assert [item["package_id"] for item in listed["items"]].count(first["package_id"]) == 1


def test_a_repeat_while_the_build_runs_starts_no_second_execution(world: World) -> None:
    # given a package whose build has just been started
    preparation = world.demonstration["preparation_id"]
    first = world.owner.expect(
        "POST", f"/preparations/{preparation}/packages", 202, {"profile": "together-sft"}
    )

    # when the request is repeated at once
    status, again = world.owner.call(
        "POST", f"/preparations/{preparation}/packages", {"profile": "together-sft"}
    )
    world.wait_for_package(first["package_id"])

    # then it is the same package, and still one execution
    assert status == 200
    assert again["package_id"] == first["package_id"]
    assert world.executions().count(first["package_id"]) == 1


def test_a_profile_that_refuses_the_method_is_recorded_refused_with_its_message(world: World) -> None:
    # given a Ready preference preparation
    preparation = world.preference["preparation_id"]

    # when a Bedrock conversation package (demonstration only) is asked for
    created = world.owner.expect(
        "POST", f"/preparations/{preparation}/packages", 202, {"profile": "bedrock-conversation"}
    )
    assert world.wait_for_package(created["package_id"])["status"] == "SUCCEEDED"

    # then the package is Refused with the profile's reason, and there is nothing to download
    package = world.owner.expect("GET", f"/packages/{created['package_id']}", 200)
    assert package["status"] == "Refused"
    assert package["reason"].startswith("profile bedrock-conversation does not take preference preparations")
    assert "trl-dpo" in package["reason"]
    assert package["download_url"] is None
    announced = [
        detail for kind, detail in received_events(world.cloud, world.events) if kind == "PackageReady"
    ]
    assert all(detail["package_id"] != package["package_id"] for detail in announced)


def test_an_unknown_profile_is_refused_naming_the_profiles(world: World) -> None:
    preparation = world.demonstration["preparation_id"]
    status, answer = world.owner.call("POST", f"/preparations/{preparation}/packages", {"profile": "alpaca"})
    assert status == 400
    assert answer["message"].startswith("there is no export profile 'alpaca': choose one of openai-chat, ")
    assert "bedrock-conversation" in answer["message"]


def test_someone_elses_preparation_and_package_are_refused(world: World) -> None:
    # given the owner's package
    preparation = world.demonstration["preparation_id"]
    created = world.owner.expect(
        "POST", f"/preparations/{preparation}/packages", 202, {"profile": "sagemaker-sft"}
    )
    world.wait_for_package(created["package_id"])

    # when another user asks for a package of it, lists its packages or reads the package
    asked = world.stranger.call("POST", f"/preparations/{preparation}/packages", {"profile": "trl-sft"})
    listed = world.stranger.call("GET", f"/preparations/{preparation}/packages")
    read = world.stranger.call("GET", f"/packages/{created['package_id']}")

    # then each is refused, and no URL is handed out
    assert [answer[0] for answer in (asked, listed, read)] == [403, 403, 403]
    assert "download_url" not in json.dumps(read[1])


def test_a_preparation_that_is_not_ready_is_refused_with_409(world: World) -> None:
    # given a preparation of the owner's that is still generating
    PreparationsRepo(load_settings().preparations_table).create(
        PreparationRecord.model_validate(
            {
                **world.demonstration,
                "preparation_id": "prep-still-generating",
                "owner": world.owner_id,
                "status": PreparationStatus.GENERATING,
                "state_hash": None,
                "examples_key": "preparations/prep-still-generating/examples.jsonl",
                "held_out_key": "preparations/prep-still-generating/held_out.jsonl",
                "coverage_key": "preparations/prep-still-generating/coverage.json",
            }
        )
    )

    # when a package of it is asked for
    status, answer = world.owner.call(
        "POST", "/preparations/prep-still-generating/packages", {"profile": "trl-sft"}
    )

    # then it is refused until the preparation is Ready, and nothing was recorded or started
    assert status == 409
    assert "Generating" in answer["message"]
    assert world.owner.expect("GET", "/preparations/prep-still-generating/packages", 200)["items"] == []


def test_a_preparation_of_an_environment_version_no_longer_registered_is_refused_with_409(
    world: World,
) -> None:
    # given a Ready preparation of the owner's whose environment version is not registered
    PreparationsRepo(load_settings().preparations_table).create(
        PreparationRecord.model_validate(
            {
                **world.demonstration,
                "preparation_id": "prep-unregistered",
                "owner": world.owner_id,
                "environment_version": "unregistered",
                "examples_key": "preparations/prep-unregistered/examples.jsonl",
                "held_out_key": "preparations/prep-unregistered/held_out.jsonl",
                "coverage_key": "preparations/prep-unregistered/coverage.json",
            }
        )
    )

    # when a package of it is asked for
    status, answer = world.owner.call(
        "POST", "/preparations/prep-unregistered/packages", {"profile": "trl-sft"}
    )

    # then it is refused, saying why (its held-out questions are in the bundle), and nothing was recorded
    assert status == 409
    assert answer["message"] == (
        f"environment {EXAMPLE} version unregistered of preparation prep-unregistered is no longer "
        "registered: register it again to package"
    )
    assert world.owner.expect("GET", "/preparations/prep-unregistered/packages", 200)["items"] == []


def test_a_package_whose_build_failed_is_built_again_when_asked_again(world: World) -> None:
    # given a package of the owner's whose first build failed
    preparation = world.demonstration["preparation_id"]
    pid = package_id(world.demonstration["state_hash"], "bedrock-conversation")
    PackagesRepo(load_settings().packages_table).put_if_absent(
        PackageRecord(
            package_id=pid,
            preparation_id=preparation,
            owner=world.owner_id,
            profile="bedrock-conversation",
            state_hash=world.demonstration["state_hash"],
            package_key=package_key(pid),
            status=PackageStatus.FAILED,
            reason="the package build timed out",
        )
    )

    # when the owner asks for it again
    again = world.owner.expect(
        "POST", f"/preparations/{preparation}/packages", 202, {"profile": "bedrock-conversation"}
    )

    # then its second build runs under a name of its own, and the package ends Ready without the old reason
    assert (again["package_id"], again["status"], again["attempt"], again["reason"]) == (
        pid,
        "Building",
        2,
        None,
    )
    assert world.wait_for_package(pid, attempt=2)["status"] == "SUCCEEDED"
    package = world.owner.expect("GET", f"/packages/{pid}", 200)
    assert (package["status"], package["reason"]) == ("Ready", None)
    assert f"{pid}-2" in world.executions()


def test_a_reinforcement_preparation_is_packaged_with_its_grader_through_the_api(world: World) -> None:
    # given a reinforcement preparation asked for through the API, a half of the correct cases mixed in
    created = world.owner.expect(
        "POST",
        "/preparations",
        201,
        {
            "environment_id": EXAMPLE,
            "environment_version": VERSION,
            "method": "reinforcement",
            "run_ids": [world.run_id],
            "settings": {"correct_share": 0.5},
        },
    )
    path = f"/preparations/{created['preparation_id']}"
    ready = _poll(
        lambda: world.owner.expect("GET", path, 200), lambda p: p["status"] != "Generating", "a preparation"
    )
    assert ready["status"] == "Ready", ready
    assert (ready["method"], ready["settings"]["correct_share"]) == ("reinforcement", 0.5)
    # and its examples carry the math template's grading fields
    examples = world.owner.expect("GET", f"{path}/examples", 200)["items"]
    assert examples and all(item["grading"]["template"] == "math" for item in examples)

    # when a TRL GRPO package is asked for
    asked = world.owner.expect("POST", f"{path}/packages", 202, {"profile": "trl-grpo"})
    assert world.wait_for_package(asked["package_id"])["status"] == "SUCCEEDED"

    # then it downloads with prompt rows, their grading and the grader the manifest pins
    package = world.owner.expect("GET", f"/packages/{asked['package_id']}", 200)
    assert package["status"] == "Ready", package
    download = requests.get(package["download_url"], timeout=30)
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        grader = archive.read("grader.py")
        rows = [json.loads(line) for line in archive.read("train.jsonl").decode("utf-8").splitlines()]
    assert manifest["grader"]["sha256"] == hashlib.sha256(grader).hexdigest()
    assert rows and all(set(row) == {"prompt", "grading"} for row in rows)

    # and a SageMaker package of it is refused, naming the profiles that take reinforcement
    refused = world.owner.expect("POST", f"{path}/packages", 202, {"profile": "sagemaker-sft"})
    world.wait_for_package(refused["package_id"])
    reason = world.owner.expect("GET", f"/packages/{refused['package_id']}", 200)["reason"]
    assert reason.startswith("profile sagemaker-sft does not take reinforcement preparations")
    assert "trl-grpo, bedrock-rft, openai-rft, generic" in reason
