"""``GET /training-runs/{id}/evaluations`` on the local cloud: the training run's owner reads every evaluation
of it, newest first and paged; the grants stored beside them are not listed; anyone else gets 404."""

from __future__ import annotations

from typing import Any

from benchgen.aws.tables.evaluations import EvaluationsRepo
from benchgen.records.evaluations import EvaluatedModel, EvaluationRecord
from benchgen.records.runs import LiveModel
from cli.api_client import Api
from localcloud.cloud import LocalCloud
from tests.integration.evaluation_setup import ENVIRONMENT, PACKAGE_ID, put_training_run, subject, user

TRAINING = "train-00000000000000000000000b"
OTHER_TRAINING = "train-00000000000000000000000c"


def _evaluation(evaluation_id: str, training_run_id: str, *, owner: str, at: str) -> EvaluationRecord:
    live = LiveModel(connection_id="conn-x", provider="openai-compatible", model_id="example-tuned")
    return EvaluationRecord(
        evaluation_id=evaluation_id,
        owner=owner,
        training_run_id=training_run_id,
        training_owner=owner,
        package_id=PACKAGE_ID,
        package_sha256="0" * 64,
        environment_id=ENVIRONMENT,
        environment_version="v1",
        trained_model="example-tuned",
        tuned=EvaluatedModel(live=live),
        base=EvaluatedModel(live=live.model_copy(update={"model_id": "example-base"})),
        authorized_by=owner,
        authorized_through="group evaluators",
        authorized_at=at,
    )


def test_the_owner_lists_a_training_runs_evaluations_newest_first_and_paged_and_a_stranger_gets_404(
    api_cloud: LocalCloud,
) -> None:
    # Given the owner's succeeded training run with two evaluations and a grant, and an evaluation of another
    # training run of theirs
    with api_cloud.serve_api(access_log=False) as server:
        owner_token = user(api_cloud, "lister@example.com", group="evaluators")
        stranger_token = user(api_cloud, "stranger@example.com", group="evaluators")
        owner, stranger = Api(server.url, owner_token), Api(server.url, stranger_token)
        owner_id = subject(owner_token)
        for training_run_id in (TRAINING, OTHER_TRAINING):
            put_training_run(
                api_cloud, training_run_id, owner=owner_id, connection_id="conn-x", package_sha256="0" * 64
            )
        table = next(name for lid, name in api_cloud.table_names.items() if lid.startswith("Evaluations"))
        evaluations = EvaluationsRepo(table)
        for evaluation_id, training_run_id, at in (
            ("eval-000000000000000000000001", TRAINING, "2026-01-01T10:00:00Z"),
            ("eval-000000000000000000000002", TRAINING, "2026-01-02T10:00:00Z"),
            ("eval-000000000000000000000003", OTHER_TRAINING, "2026-01-03T10:00:00Z"),
        ):
            assert evaluations.create(_evaluation(evaluation_id, training_run_id, owner=owner_id, at=at))
        owner.expect(
            "POST", f"/training-runs/{TRAINING}/evaluation-grants", 201, {"user": subject(stranger_token)}
        )

        # When the owner lists the training run's evaluations, all at once and one per page
        listed = owner.expect("GET", f"/training-runs/{TRAINING}/evaluations", 200)
        first = owner.expect("GET", f"/training-runs/{TRAINING}/evaluations?limit=1", 200)
        second = owner.expect(
            "GET", f"/training-runs/{TRAINING}/evaluations?limit=1&next_token={first['next_token']}", 200
        )
        # and a stranger (granted, even) asks for the same list
        status, refused = stranger.call("GET", f"/training-runs/{TRAINING}/evaluations")

    # Then the owner sees this run's two evaluations, newest first, with what each view carries
    ids = [item["evaluation_id"] for item in listed["items"]]
    assert ids == ["eval-000000000000000000000002", "eval-000000000000000000000001"]
    assert listed["next_token"] is None
    newest: dict[str, Any] = listed["items"][0]
    assert (newest["status"], newest["training_run_id"]) == ("Running", TRAINING)
    assert newest["tuned"]["model_id"] == "example-tuned"
    # and the pages give the same two, one each
    assert [item["evaluation_id"] for item in first["items"] + second["items"]] == ids
    assert second["next_token"] is None
    # and the stranger is told there is no such training run of theirs
    assert status == 404
    assert refused["message"] == (f"no training run {TRAINING!r} of yours: GET /training-runs lists yours")
