"""An evaluation end to end on the local cloud: example-tuned against example-base on the demo
environment's held-out cases, the EvaluationPipeline and both InferencePipelines executing for real
against the loopback model server, and the report checked against benchgen.compare run directly on the
two runs' verdicts."""

from __future__ import annotations

import json
import secrets
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import requests

from benchgen.compare.report import NOT_ESTABLISHED, RunIdentity, compare_runs
from benchgen.compare.selection import PackageRef
from cli.api_client import Api
from localcloud.cloud import LocalCloud
from localcloud.model_server import ExampleModelServer
from tests.integration.evaluation_setup import (
    ENVIRONMENT,
    PACKAGE_ID,
    held_out_ids,
    put_package,
    put_training_run,
    register,
    subject,
    user,
)
from tests.integration.factories import KeyQuotingServer, everything_stored, received_events, watch_events

TRAINING = "train-0000000000000000000000e2"


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    # The local cloud really waits: short model retries and a one-second wait between checks.
    monkeypatch.setenv("MODEL_RETRY_BASE_SECONDS", "0.01")
    monkeypatch.setenv("EVALUATION_WAIT_SECONDS", "1")


def _post(api: Api, path: str, body: dict[str, Any], key: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        api.url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": api.token, "Content-Type": "application/json", "Idempotency-Key": key},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, json.loads(response.read())


def _download(cloud: LocalCloud, key: str, path: Path) -> Path:
    path.write_bytes(cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read())
    return path


def _wait(cloud: LocalCloud, evaluation_id: str) -> dict[str, Any]:
    machine = cloud.state_machine_arns["EvaluationPipeline"]
    execution = cloud.wait_for_execution(evaluation_id, timeout=180, state_machine_arn=machine)
    cloud.settle()
    return execution


def test_an_evaluation_compares_the_trained_model_with_its_base_on_the_held_out_cases(
    quick: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the demo environment, the owner in the evaluators group with a connection to the example
    # models, and the owner's succeeded training run whose package holds out 4 of the 50 cases
    register(cloud, tmp_path)
    events = watch_events(cloud)
    with cloud.serve_api(access_log=False) as server:
        token = user(cloud, "owner@example.com", group="evaluators")
        api = Api(server.url, token)
        owner = subject(token)
        connection = api.expect(
            "POST",
            "/connections",
            201,
            {"name": "example models", "provider": "openai-compatible", "base_url": models.base_url},
        )["connection_id"]
        sha256 = put_package(cloud)
        put_training_run(cloud, TRAINING, owner=owner, connection_id=connection, package_sha256=sha256)
        held_out = held_out_ids()
        assert len(held_out) == 4

        # When the owner asks for the evaluation with the defaults, twice with one Idempotency-Key
        status, created = _post(api, f"/training-runs/{TRAINING}/evaluations", {}, "evaluate-once")
        _, again = _post(api, f"/training-runs/{TRAINING}/evaluations", {}, "evaluate-once")
        execution = _wait(cloud, created["evaluation_id"])

        # Then one evaluation was made, authorized through the group, calling the trained model by the
        # name the training run recorded and the base model by the training's base model
        assert status == 202
        assert again["evaluation_id"] == created["evaluation_id"]
        assert (created["authorized_by"], created["authorized_through"]) == (owner, "group evaluators")
        assert (created["tuned"]["model_id"], created["base"]["model_id"]) == (
            "example-tuned",
            "example-base",
        )
        assert created["base"]["reused"] is False
        evaluation = api.expect("GET", f"/evaluations/{created['evaluation_id']}", 200)
        assert (execution["status"], evaluation["status"]) == ("SUCCEEDED", "Completed"), evaluation[
            "failure_reason"
        ]

        assert evaluation["held_out_count"] == 4
        # and each model was asked exactly the held-out cases (plus one reachability call each)
        asked = [case_id for case_id in models.faults.requests if case_id is not None]
        assert sorted(asked) == sorted(held_out * 2)
        assert len(models.faults.requests) == 10
        for side in ("tuned", "base"):
            run = api.expect("GET", f"/runs/{evaluation[side]['run_id']}", 200)
            assert (run["status"], run["case_scope"], run["counts"]["total"]) == ("Completed", 4, 4)
            # asked on demand, whatever their size: the evaluation waits as long as an on-demand run takes
            config = api.expect("GET", f"/runs/{evaluation[side]['run_id']}/config", 200)
            assert config["inference_mode"] == "on_demand"

        # And the report is benchgen.compare's comparison of the two runs' verdicts on the held-out cases
        report = api.expect("GET", f"/evaluations/{created['evaluation_id']}/report", 200)
        tuned_run = api.expect("GET", f"/runs/{evaluation['tuned']['run_id']}/files", 200)
        base_run = api.expect("GET", f"/runs/{evaluation['base']['run_id']}/files", 200)
    scoring = {
        side: _download(
            cloud,
            next(f["key"] for f in files["files"] if f["label"] == "Scoring Output"),
            tmp_path / f"{side}.zip",
        )
        for side, files in (("tuned", tuned_run), ("base", base_run))
    }
    expected = compare_runs(
        RunIdentity(run_id=evaluation["base"]["run_id"], model="example-base", environment_id=ENVIRONMENT),
        scoring["base"],
        RunIdentity(run_id=evaluation["tuned"]["run_id"], model="example-tuned", environment_id=ENVIRONMENT),
        scoring["tuned"],
        cases=held_out,
        package=PackageRef(package_id=PACKAGE_ID, sha256=sha256, held_out=tuple(held_out)),
    )
    assert report["report"]["comparison"] == expected.model_dump(mode="json")
    # example-base gets 1 of the 4 held-out cases wrong and example-tuned answers it right: too few
    # changed cases for any verdict
    comparison = report["report"]["comparison"]
    assert (comparison["accuracy_before"], comparison["accuracy_after"]) == (0.75, 1.0)
    assert (comparison["fixed_count"], comparison["broken_count"], comparison["mcnemar_p"]) == (1, 0, 1.0)
    assert comparison["verdict"] == "sample too small to tell"
    assert comparison["selection"] == f"the 4 held-out cases of package {PACKAGE_ID}"
    (fixed,) = comparison["fixed"]
    assert (fixed["before"]["passed"], fixed["after"]["passed"]) == (False, True)
    assert fixed["before"]["response"] != fixed["after"]["response"]
    assert (evaluation["verdict"], evaluation["accuracy_before"], evaluation["accuracy_after"]) == (
        "sample too small to tell",
        0.75,
        1.0,
    )
    # with the identities that make it checkable, and the sentence about training completion
    body = report["report"]
    assert (body["package_id"], body["package_sha256"], body["trained_model"]) == (
        PACKAGE_ID,
        sha256,
        "example-tuned",
    )
    assert (body["tuned"]["model_called"], body["base"]["model_called"]) == ("example-tuned", "example-base")
    assert body["notice"] == NOT_ESTABLISHED
    assert evaluation["notice"] == NOT_ESTABLISHED
    # moto answers the presigned URL in-process (through requests, which it intercepts)
    html = requests.get(report["html_url"], timeout=30).text
    assert "Training completion alone does not establish benchmark improvement" in html
    # and the page to show in place is the same page, not sent as a download
    shown = requests.get(report["view_url"], timeout=30)
    assert shown.text == html
    assert "attachment" not in shown.headers.get("Content-Disposition", "")
    assert sha256 in html and "example-tuned" in html and "group evaluators" in html
    assert report["expires_in"] <= 3600
    # and EvaluationCompleted went to the bus with the verdict
    completed = [detail for kind, detail in received_events(cloud, events) if kind == "EvaluationCompleted"]
    assert completed == [{"evaluation_id": created["evaluation_id"], "verdict": "sample too small to tell"}]

    # When the owner asks for a second evaluation of the same training run
    with cloud.serve_api(access_log=False) as server:
        api = Api(server.url, token)
        second = api.expect("POST", f"/training-runs/{TRAINING}/evaluations", 202, {})
        assert _wait(cloud, second["evaluation_id"])["status"] == "SUCCEEDED"
        done = api.expect("GET", f"/evaluations/{second['evaluation_id']}", 200)

    # Then the base model's completed run on the held-out cases is reused, and only the trained model is
    # asked again
    assert second["evaluation_id"] != created["evaluation_id"]
    assert (second["base"]["reused"], second["base"]["run_id"]) == (True, evaluation["base"]["run_id"])
    assert len(models.faults.requests) == 15
    assert (done["status"], done["verdict"], done["accuracy_before"]) == (
        "Completed",
        "sample too small to tell",
        0.75,
    )


def test_a_trained_model_that_does_not_answer_fails_the_evaluation_with_its_runs_reason(
    quick: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a succeeded training run, and a tuned model id the model server does not serve
    register(cloud, tmp_path)
    events = watch_events(cloud)
    with cloud.serve_api(access_log=False) as server:
        token = user(cloud, "owner@example.com", group="evaluators")
        api = Api(server.url, token)
        connection = api.expect(
            "POST",
            "/connections",
            201,
            {"name": "example models", "provider": "openai-compatible", "base_url": models.base_url},
        )["connection_id"]
        put_training_run(
            cloud, TRAINING, owner=subject(token), connection_id=connection, package_sha256=put_package(cloud)
        )

        # When the evaluation calls it
        created = api.expect(
            "POST",
            f"/training-runs/{TRAINING}/evaluations",
            202,
            {"tuned": {"connection_id": connection, "model_id": "example-missing"}},
        )
        execution = _wait(cloud, created["evaluation_id"])
        evaluation = api.expect("GET", f"/evaluations/{created['evaluation_id']}", 200)
        status, report = api.call("GET", f"/evaluations/{created['evaluation_id']}/report")

    # Then the evaluation failed, saying which run failed and why, and it has no report
    assert execution["status"] == "FAILED"
    assert evaluation["status"] == "Failed"
    tuned_run = evaluation["tuned"]["run_id"]
    assert evaluation["failure_reason"].startswith(
        f"the trained model's run {tuned_run} failed: the model example-missing at {models.base_url} did not "
        "answer"
    )
    assert status == 409
    assert report["message"].startswith(
        f"evaluation {created['evaluation_id']} is Failed and has no report: "
    )
    # and EvaluationFailed went to the bus with the reason
    failed = [detail for kind, detail in received_events(cloud, events) if kind == "EvaluationFailed"]
    assert failed == [{"evaluation_id": created["evaluation_id"], "reason": evaluation["failure_reason"]}]


def test_a_model_quoting_the_key_fails_the_evaluation_without_the_key_in_its_reason(
    quick: None, cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given a succeeded training run whose connection's key, in a tagged secret, the model server quotes
    # back in every 401 ("invalid API key: Bearer <key>")
    key = "sk-planted-" + secrets.token_hex(12)
    arn = cloud.client("secretsmanager").create_secret(
        Name="benchgen/evaluation-quoting",
        SecretString=key,
        Tags=[{"Key": "benchgen:access", "Value": "inference"}],
    )["ARN"]
    register(cloud, tmp_path)
    with KeyQuotingServer() as models, cloud.serve_api(access_log=False) as server:
        token = user(cloud, "owner@example.com", group="evaluators")
        api = Api(server.url, token)
        connection = api.expect(
            "POST",
            "/connections",
            201,
            {
                "name": "quoting",
                "provider": "openai-compatible",
                "base_url": models.url + "/v1",
                "secret_arn": arn,
            },
        )["connection_id"]
        put_training_run(
            cloud, TRAINING, owner=subject(token), connection_id=connection, package_sha256=put_package(cloud)
        )

        # When the evaluation asks the trained model and its base
        created = api.expect(
            "POST",
            f"/training-runs/{TRAINING}/evaluations",
            202,
            {"tuned": {"connection_id": connection, "model_id": "example-tuned"}},
        )
        assert _wait(cloud, created["evaluation_id"])["status"] == "FAILED"
        evaluation = api.expect("GET", f"/evaluations/{created['evaluation_id']}", 200)

    # Then it failed with its run's reason, which keeps the provider's words without the key
    assert evaluation["status"] == "Failed"
    assert key not in json.dumps(evaluation)
    assert "invalid API key: Bearer [redacted]" in evaluation["failure_reason"]
    # and the key is in no item, object or execution history
    stored = everything_stored(cloud)
    assert arn in stored and key not in stored
