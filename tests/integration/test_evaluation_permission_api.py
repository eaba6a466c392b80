"""Evaluation grants and refusals through the REST API on the local cloud: each refusal says which
permission is missing and how to get it, and records nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from benchgen.aws.tables.connections import ConnectionsRepo
from benchgen.aws.tables.runs import RunsRepo
from benchgen.outputs import RunOutput
from benchgen.providers import registry
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import ProviderKind
from cli.api_client import Api
from localcloud.cloud import LocalCloud
from tests.integration.evaluation_setup import put_package, put_training_run, subject, user

OPENAI_COMPATIBLE = ProviderKind("openai-compatible")

TRAINING = "train-00000000000000000000000a"


@pytest.fixture
def people(api_cloud: LocalCloud) -> Iterator[dict[str, Any]]:
    """The owner (in the evaluators group), an owner outside it, and another user; a package in the bucket."""
    with api_cloud.serve_api(access_log=False) as server:
        owner = user(api_cloud, "owner@example.com", group="evaluators")
        outsider_owner = user(api_cloud, "trainer@example.com")
        other = user(api_cloud, "other@example.com", group="evaluators")
        yield {
            "owner": Api(server.url, owner),
            "owner_id": subject(owner),
            "trainer": Api(server.url, outsider_owner),
            "trainer_id": subject(outsider_owner),
            "other": Api(server.url, other),
            "other_id": subject(other),
            "sha256": put_package(api_cloud),
        }


def _evaluations(cloud: LocalCloud) -> list[dict[str, Any]]:
    table = next(name for lid, name in cloud.table_names.items() if lid.startswith("Evaluations"))
    return list(cloud.client("dynamodb").scan(TableName=table)["Items"])


def test_a_user_who_neither_owns_the_training_run_nor_holds_a_grant_is_refused_403(
    api_cloud: LocalCloud, people: dict[str, Any]
) -> None:
    # Given alice's succeeded training run, and another user in the evaluators group
    put_training_run(
        api_cloud, TRAINING, owner=people["owner_id"], connection_id="conn-x", package_sha256=people["sha256"]
    )

    # When the other user asks for its evaluation
    status, answer = people["other"].call("POST", f"/training-runs/{TRAINING}/evaluations", {})

    # Then it is refused, naming the missing grant and how to get it, and nothing is recorded
    assert status == 403
    assert answer["message"] == (
        f"evaluating training run {TRAINING} needs its owner's grant: you do not own it and its owner has "
        f"granted you no evaluation; ask the owner to call POST /training-runs/{TRAINING}/evaluation-grants "
        "with your user id"
    )
    assert _evaluations(api_cloud) == []


def test_the_owner_outside_the_evaluators_group_without_a_grant_is_refused_403(
    api_cloud: LocalCloud, people: dict[str, Any]
) -> None:
    put_training_run(
        api_cloud,
        TRAINING,
        owner=people["trainer_id"],
        connection_id="conn-x",
        package_sha256=people["sha256"],
    )

    status, answer = people["trainer"].call("POST", f"/training-runs/{TRAINING}/evaluations", {})

    assert status == 403
    assert answer["message"] == (
        f"evaluating training run {TRAINING} needs the evaluators permission: you own it but are not in the "
        "Cognito group 'evaluators'; ask an administrator to add you to that group"
    )
    assert _evaluations(api_cloud) == []


def test_a_granted_user_asking_for_a_training_run_that_has_not_succeeded_gets_409_with_its_status(
    api_cloud: LocalCloud, people: dict[str, Any]
) -> None:
    # Given a training run still Running, whose owner granted the other user its evaluation
    put_training_run(
        api_cloud,
        TRAINING,
        owner=people["owner_id"],
        connection_id="conn-x",
        package_sha256=people["sha256"],
        status=TrainingStatus.RUNNING,
    )
    grant = people["owner"].expect(
        "POST", f"/training-runs/{TRAINING}/evaluation-grants", 201, {"user": people["other_id"]}
    )
    assert (grant["user"], grant["granted_by"]) == (people["other_id"], people["owner_id"])

    # When the granted user asks for the evaluation
    status, answer = people["other"].call("POST", f"/training-runs/{TRAINING}/evaluations", {})

    # Then it is refused for the run's status, not for want of permission
    assert status == 409
    assert answer["message"].startswith(f"training run {TRAINING} is Running, not Succeeded")
    assert [item["evaluation_id"]["S"] for item in _evaluations(api_cloud)] == [
        f"grant:{TRAINING}:{people['other_id']}"
    ]


def test_only_the_owner_grants_another_users_training_run_is_answered_404(
    api_cloud: LocalCloud, people: dict[str, Any]
) -> None:
    put_training_run(
        api_cloud, TRAINING, owner=people["owner_id"], connection_id="conn-x", package_sha256=people["sha256"]
    )

    status, answer = people["other"].call(
        "POST", f"/training-runs/{TRAINING}/evaluation-grants", {"user": people["other_id"]}
    )
    self_status, self_answer = people["owner"].call(
        "POST", f"/training-runs/{TRAINING}/evaluation-grants", {"user": people["owner_id"]}
    )

    assert status == 404
    assert answer["message"] == (
        f"no training run '{TRAINING}' of yours: only its owner grants its evaluation"
    )
    assert self_status == 400
    assert "you evaluate it through the evaluators group" in self_answer["message"]
    assert _evaluations(api_cloud) == []


def test_a_bedrock_result_must_be_named_as_deployed_before_it_is_evaluated(
    api_cloud: LocalCloud, people: dict[str, Any]
) -> None:
    put_training_run(
        api_cloud,
        TRAINING,
        owner=people["owner_id"],
        connection_id="conn-x",
        package_sha256=people["sha256"],
        provider="bedrock",
    )

    status, answer = people["owner"].call("POST", f"/training-runs/{TRAINING}/evaluations", {})

    assert status == 400
    assert answer["message"].startswith(
        "a Bedrock custom model (example-tuned) answers only once deployed: create a custom model deployment"
    )
    assert "pass tuned = {connection_id" in answer["message"]
    assert _evaluations(api_cloud) == []


def test_a_named_base_run_of_another_environment_version_is_refused_400(
    api_cloud: LocalCloud, people: dict[str, Any]
) -> None:
    # Given the owner's connection, succeeded training run, and a completed run of another environment
    connections = next(n for lid, n in api_cloud.table_names.items() if lid.startswith("Connections"))
    assert ConnectionsRepo(connections).put(
        ConnectionRecord(
            connection_id="conn-owned",
            owner=people["owner_id"],
            name="example models",
            provider=OPENAI_COMPATIBLE,
            base_url="http://127.0.0.1:9/v1",
            profile=registry.provider(OPENAI_COMPATIBLE).capabilities,
        )
    )
    put_training_run(
        api_cloud,
        TRAINING,
        owner=people["owner_id"],
        connection_id="conn-owned",
        package_sha256=people["sha256"],
    )
    runs = RunsRepo(next(n for lid, n in api_cloud.table_names.items() if lid.startswith("Runs")))
    assert runs.create(
        RunRecord(
            run_id="run-elsewhere",
            environment_id="gsm8k-en",
            environment_version="v1",
            model="example-base",
            owner=people["owner_id"],
            status=RunStatus.COMPLETED,
            files={RunOutput.SCORING_OUTPUT: "runs/run-elsewhere/scoring_output.zip"},
        )
    )

    # When the owner names it as the base run
    status, answer = people["owner"].call(
        "POST", f"/training-runs/{TRAINING}/evaluations", {"base_run_id": "run-elsewhere"}
    )

    # Then it is refused saying why, and nothing is recorded
    assert status == 400
    assert answer["message"] == (
        "run run-elsewhere cannot be the base run: it ran environment gsm8k-en version v1, not the "
        "package's gsm8k-tr version v1"
    )
    assert _evaluations(api_cloud) == []
