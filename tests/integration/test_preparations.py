"""Preparations on the local cloud: runs judged by the real pipeline, a preparation made by the real state
machine, read back through the API handler as API Gateway calls it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws import wiring
from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.aws.tables.preparations import PreparationsRepo
from benchgen.bucket_layout import execution_name
from benchgen.ports.pages import encode_token
from benchgen.records.preparations import PreparationStatus
from examplegen.writing import write_bundle_zip
from functions.api import handler as api_handler
from localcloud.cloud import LocalCloud
from tests.integration.factories import (
    EXAMPLES,
    api_context,
    example_submission,
    proxy_event,
    received_events,
    watch_events,
)

# GET requests count no business event; powertools warns about the empty metric set each time.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

OWNER = "trainer-a"
STRANGER = "trainer-b"
ENVIRONMENT = "gsm8k-en"
CRITERIA = ["final-answer", "answer-format", "units"]


@dataclass
class Answer:
    status: int
    body: Any


class World:
    """One local cloud with a registered environment (two versions), judged runs and a preparation."""

    def __init__(self, cloud: LocalCloud, tmp_path: Path) -> None:
        self.cloud = cloud
        self.tmp_path = tmp_path
        self.machine = cloud.state_machine_arns["PreparationPipeline"]
        self.preparations = PreparationsRepo(cloud.table_names["PreparationsTable"])

    def call(self, method: str, path: str, *, sub: str = OWNER, **kwargs: Any) -> Answer:
        wiring.reset()
        answer = api_handler.handler(proxy_event(method, path, sub=sub, **kwargs), api_context())
        return Answer(answer["statusCode"], json.loads(answer["body"]) if answer["body"] else None)

    def register(self, version: str) -> None:
        archive = write_bundle_zip(EXAMPLES / ENVIRONMENT / "bundle", self.tmp_path / f"bundle-{version}.zip")
        self.cloud.client("s3").put_object(
            Bucket=self.cloud.bucket,
            Key=f"environments/{ENVIRONMENT}/{version}/bundle.zip",
            Body=archive.read_bytes(),
        )
        self.cloud.settle()

    def run(self, *, owner: str = OWNER, version: str = "v1", upload: bool = True) -> str:
        """A run created through POST /runs; with ``upload``, judged by the real pipeline to Completed."""
        body = {"environment_id": ENVIRONMENT, "version": version, "model": "Qwen2.5-7B-LoRA"}
        created = self.call("POST", "/runs", sub=owner, body={**body, "filename": "predictions.json"})
        assert created.status == 201, created.body
        run_id: str = created.body["run"]["run_id"]
        if upload:
            submission = example_submission(ENVIRONMENT)
            self.cloud.client("s3").put_object(
                Bucket=self.cloud.bucket, Key=created.body["upload_key"], Body=submission.read_bytes()
            )
            self.cloud.settle()
            self.cloud.wait_for_execution(execution_name(run_id))
            assert self.call("GET", f"/runs/{run_id}").body["status"] == "Completed"
        return run_id

    def prepare(
        self, run_ids: list[str], *, sub: str = OWNER, headers: dict[str, str] | None = None, **spec: Any
    ) -> Answer:
        body = {
            "environment_id": ENVIRONMENT,
            "environment_version": "v1",
            "method": "demonstration",
            "run_ids": run_ids,
            **spec,
        }
        return self.call("POST", "/preparations", sub=sub, body=body, headers=headers)

    def finish(self, preparation_id: str) -> dict[str, Any]:
        return self.cloud.wait_for_execution(preparation_id, state_machine_arn=self.machine)

    def executions(self) -> list[str]:
        listed = self.cloud.client("stepfunctions").list_executions(stateMachineArn=self.machine)
        return [execution["name"] for execution in listed["executions"]]


@pytest.fixture(scope="module")
def world(
    stack_templates: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
            patch.delenv(name, raising=False)
        with LocalCloud(stack_templates) as cloud:
            world = World(cloud, tmp_path_factory.mktemp("preparations"))
            world.register("v1")
            world.register("v2")
            yield world
            wiring.reset()


@pytest.fixture(scope="module")
def judged(world: World) -> str:
    """The owner's completed run on v1."""
    return world.run()


@pytest.fixture(scope="module")
def ready(world: World, judged: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """A preparation of the judged run, made by the state machine; with the events it published."""
    queue = watch_events(world.cloud)
    answer = world.prepare([judged])
    assert answer.status == 201, answer.body
    preparation_id: str = answer.body["preparation_id"]
    assert world.finish(preparation_id)["status"] == "SUCCEEDED"
    return preparation_id, received_events(world.cloud, queue)


def _examples(world: World, preparation_id: str, **query: str) -> list[dict[str, Any]]:
    """Every page of the examples view with ``query``, followed through next_token."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page_query = {**query, **({"next_token": token} if token else {})}
        answer = world.call("GET", f"/preparations/{preparation_id}/examples", query=page_query)
        assert answer.status == 200, answer.body
        assert len(answer.body["items"]) <= int(query.get("limit", "20"))
        items.extend(answer.body["items"])
        token = answer.body["next_token"]
        if token is None:
            return items


# ---- a preparation made from a judged run ----------------------------------------------------------------


def test_a_preparation_of_a_completed_run_is_recorded_ready_with_its_counts(
    world: World, judged: str, ready: tuple[str, Any]
) -> None:
    preparation_id, _ = ready
    answer = world.call("GET", f"/preparations/{preparation_id}")
    assert answer.status == 200
    detail = answer.body
    assert (detail["status"], detail["failure_reason"]) == ("Ready", None)
    assert (detail["environment_id"], detail["environment_version"]) == (ENVIRONMENT, "v1")
    assert (detail["method"], detail["run_ids"], detail["base_model"]) == (
        "demonstration",
        [judged],
        "Qwen2.5-7B-LoRA",
    )
    assert detail["benchmark"] == "GSM8K-EN"
    assert detail["example_count"] > 0
    assert sum(detail["splits"].values()) == detail["example_count"]
    assert sum(detail["kinds"].values()) == detail["example_count"]
    assert re.fullmatch(r"[0-9a-f]{64}", detail["state_hash"])
    assert detail["held_out_count"] >= 1
    assert detail["finished_at"] is not None
    assert "owner" not in detail


def test_every_example_is_read_once_through_the_pages_in_the_files_order(
    world: World, ready: tuple[str, Any]
) -> None:
    preparation_id, _ = ready
    record = world.preparations.get(preparation_id)
    assert record is not None
    items = _examples(world, preparation_id, limit="7")
    assert len(items) == record.example_count
    assert len({item["example_id"] for item in items}) == len(items)
    stored = world.cloud.client("s3").get_object(Bucket=world.cloud.bucket, Key=record.examples_key)
    lines = stored["Body"].read().decode().splitlines()
    assert [item["example_id"] for item in items] == [json.loads(line)["example_id"] for line in lines]


def test_examples_are_filtered_by_split_kind_and_criterion(world: World, ready: tuple[str, Any]) -> None:
    preparation_id, _ = ready
    record = world.preparations.get(preparation_id)
    assert record is not None
    train = _examples(world, preparation_id, split="train", limit="5")
    assert len(train) == record.splits["train"] > 0
    assert {item["split"] for item in train} == {"train"}
    seeds = _examples(world, preparation_id, kind="seed")
    assert len(seeds) == record.kinds["seed"] > 0
    assert {item["kind"] for item in seeds} == {"seed"}
    governed = _examples(world, preparation_id, criterion="final-answer", split="validation")
    assert all("final-answer" in item["criteria"] and item["split"] == "validation" for item in governed)
    assert _examples(world, preparation_id, criterion="no-such-criterion") == []


@pytest.mark.parametrize(
    "position",
    [None, {"offset": "5"}, {"offset": "999999999"}, {"offset": "-1"}],
    ids=["not-a-position", "inside-a-line", "past-the-end", "negative"],
)
def test_a_next_token_the_examples_view_did_not_give_is_refused(
    world: World, ready: tuple[str, Any], position: dict[str, str] | None
) -> None:
    preparation_id, _ = ready
    token = encode_token(position) if position else "bm90LWEtdG9rZW4"
    answer = world.call("GET", f"/preparations/{preparation_id}/examples", query={"next_token": token})
    assert answer.status == 400
    assert "next_token is not one this listing returned" in answer.body["message"]


def test_coverage_counts_the_splits_and_lists_as_many_gaps_as_the_record_says(
    world: World, ready: tuple[str, Any]
) -> None:
    preparation_id, _ = ready
    record = world.preparations.get(preparation_id)
    assert record is not None
    answer = world.call("GET", f"/preparations/{preparation_id}/coverage")
    assert answer.status == 200
    assert answer.body["splits"] == record.splits
    assert len(answer.body["gaps"]) == record.gap_count
    assert all(gap["message"] for gap in answer.body["gaps"])


def test_a_ready_preparation_is_announced_once_with_its_state_hash(
    world: World, ready: tuple[str, Any]
) -> None:
    preparation_id, events = ready
    record = world.preparations.get(preparation_id)
    assert record is not None
    announced = [detail for kind, detail in events if kind == "PreparationReady"]
    assert announced == [
        {
            "preparation_id": preparation_id,
            "state_hash": record.state_hash,
            "example_count": record.example_count,
        }
    ]


# ---- who may read it -------------------------------------------------------------------------------------


def test_a_preparation_is_its_owners_alone(world: World, ready: tuple[str, Any]) -> None:
    preparation_id, _ = ready
    for path in ("", "/examples", "/coverage"):
        answer = world.call("GET", f"/preparations/{preparation_id}{path}", sub=STRANGER)
        assert answer.status == 403
        assert answer.body["message"] == "only the preparation's owner can read it"
    assert world.call("GET", "/preparations/prep-missing").status == 404
    theirs = world.call("GET", "/preparations", sub=STRANGER)
    assert preparation_id not in [item["preparation_id"] for item in theirs.body["items"]]


def test_the_owners_list_is_newest_first_and_paged(world: World, judged: str, ready: tuple[str, Any]) -> None:
    first, _ = ready
    second = world.prepare([judged], method="preference").body["preparation_id"]
    world.finish(second)
    page = world.call("GET", "/preparations", query={"limit": "1"})
    assert [item["preparation_id"] for item in page.body["items"]] == [second]
    rest = world.call("GET", "/preparations", query={"limit": "50", "next_token": page.body["next_token"]})
    assert first in [item["preparation_id"] for item in rest.body["items"]]
    assert second not in [item["preparation_id"] for item in rest.body["items"]]


# ---- refusals --------------------------------------------------------------------------------------------


def test_someone_elses_run_is_refused_by_name(world: World, judged: str) -> None:
    theirs = world.run(owner=STRANGER)
    before = world.executions()
    answer = world.prepare([judged, theirs])
    assert answer.status == 403
    assert answer.body["message"] == (
        f"runs {theirs} are not yours: a preparation draws only from your own runs"
    )
    assert world.executions() == before


def test_a_run_on_another_version_is_refused_naming_the_run_and_its_version(
    world: World, judged: str
) -> None:
    other = world.run(version="v2")
    answer = world.prepare([judged, other])
    assert answer.status == 400
    assert (
        f"runs {other} ({ENVIRONMENT} version v2) are not on {ENVIRONMENT} version v1"
        in answer.body["message"]
    )


def test_an_unknown_criterion_is_refused_naming_the_valid_ids(world: World, judged: str) -> None:
    answer = world.prepare([judged], criteria=["final-answer", "style"])
    assert answer.status == 400
    assert answer.body["message"] == (
        f"criteria style are not criteria of {ENVIRONMENT} version v1; the valid ids are "
        + ", ".join(CRITERIA)
    )


def test_a_run_that_is_not_completed_is_refused_with_its_status(world: World, judged: str) -> None:
    pending = world.run(upload=False)
    answer = world.prepare([judged, pending])
    assert answer.status == 409
    assert answer.body["message"] == (
        f"runs {pending} (Pending) are not Completed: wait until they are, or leave them out"
    )


def test_a_run_that_does_not_exist_is_named(world: World, judged: str) -> None:
    answer = world.prepare([judged, "run-nowhere"])
    assert answer.status == 404
    assert answer.body["message"] == "no run run-nowhere: check run_ids (GET /runs lists runs)"


# ---- retries and failures --------------------------------------------------------------------------------


def test_a_retry_with_the_same_idempotency_key_gives_one_preparation(world: World, judged: str) -> None:
    key = {"Idempotency-Key": "prepare-once-1"}
    before = world.executions()
    first = world.prepare([judged], headers=key)
    again = world.prepare([judged], headers=key)
    assert (first.status, again.status) == (201, 201)
    assert again.body["preparation_id"] == first.body["preparation_id"]
    assert sorted(world.executions()) == sorted([*before, first.body["preparation_id"]])
    world.finish(first.body["preparation_id"])


def test_an_idempotency_key_reused_with_another_body_is_refused(world: World, judged: str) -> None:
    key = {"Idempotency-Key": "prepare-once-2"}
    first = world.prepare([judged], headers=key)
    assert first.status == 201
    world.finish(first.body["preparation_id"])
    before = world.executions()
    again = world.prepare([judged], headers=key, method="preference")
    assert again.status == 422
    assert again.body["message"] == (
        "Idempotency-Key 'prepare-once-2' was already used with a different body: resend the same body to "
        "get that preparation, or use a new key for a new preparation"
    )
    assert world.executions() == before


def test_a_run_named_twice_is_refused(world: World, judged: str) -> None:
    answer = world.prepare([judged, judged])
    assert answer.status == 400
    assert answer.body["message"] == f"run_ids names {judged} more than once: list each run once"


def test_a_failure_in_generate_marks_the_preparation_failed_with_its_sentence(
    world: World, judged: str
) -> None:
    # given a run whose verdicts are gone from the bucket after the request was accepted
    s3 = world.cloud.client("s3")
    key = f"runs/{judged}/scoring_output.zip"
    kept = s3.get_object(Bucket=world.cloud.bucket, Key=key)["Body"].read()
    s3.delete_object(Bucket=world.cloud.bucket, Key=key)
    try:
        answer = world.prepare([judged])
        assert answer.status == 201
        execution = world.finish(answer.body["preparation_id"])
    finally:
        s3.put_object(Bucket=world.cloud.bucket, Key=key, Body=kept)

    # then the preparation says why, and the execution failed (an operator's alarm, not the user's doing)
    failed = world.call("GET", f"/preparations/{answer.body['preparation_id']}").body
    assert failed["status"] == "Failed"
    assert failed["failure_reason"] == f"{key} is not in the bucket {world.cloud.bucket}"
    assert execution["status"] == "FAILED"
    examples = world.call("GET", f"/preparations/{answer.body['preparation_id']}/examples")
    assert examples.status == 409
    assert "it has no examples" in examples.body["message"]


def test_a_spec_generate_refuses_fails_the_preparation_but_not_the_execution(
    world: World, judged: str
) -> None:
    # given a version registered before its criteria were recorded, so the API cannot check the scope
    environments = EnvironmentsRepo(world.cloud.table_names["EnvironmentsTable"])
    world.cloud.client("dynamodb").update_item(
        TableName=environments.table_name,
        Key={"environment_id": {"S": ENVIRONMENT}, "version": {"S": "v1"}},
        UpdateExpression="REMOVE criteria",
    )
    try:
        answer = world.prepare([judged], criteria=["style"])
    finally:
        world.cloud.client("dynamodb").update_item(
            TableName=environments.table_name,
            Key={"environment_id": {"S": ENVIRONMENT}, "version": {"S": "v1"}},
            UpdateExpression="SET criteria = :ids",
            ExpressionAttributeValues={":ids": {"L": [{"S": c} for c in CRITERIA]}},
        )
    assert answer.status == 201

    # when the state machine runs, then Generate's refusal is the preparation's reason
    execution = world.finish(answer.body["preparation_id"])
    record = world.preparations.get(answer.body["preparation_id"])
    assert record is not None and record.status is PreparationStatus.FAILED
    assert record.failure_reason is not None and "style" in record.failure_reason
    assert all(criterion in record.failure_reason for criterion in CRITERIA)
    assert execution["status"] == "SUCCEEDED"
