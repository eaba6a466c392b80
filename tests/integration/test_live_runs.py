"""Live-model runs on the local cloud: the InferencePipeline from the synthesized template (its Map
included) asks the local server of simulated models every case, and the generated submission goes through
the existing ingest and score unchanged. Faults are injected by the model server."""

from __future__ import annotations

import base64
import json
import logging
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from benchgen.aws.tables.connections import ConnectionsRepo
from benchgen.aws.tables.runs import RunsRepo
from benchgen.outputs import RunOutput
from benchgen.providers import registry
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.runs import LiveModel, RunRecord, RunStatus
from benchgen.vocabulary import ProviderKind, Sampling
from cli.api_client import Api
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, ExampleModelServer, Fault
from tests.integration.factories import KeyQuotingServer, everything_stored

OPENAI_COMPATIBLE = ProviderKind("openai-compatible")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _runs(cloud: LocalCloud) -> RunsRepo:
    return RunsRepo(next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs")))


def _register(cloud: LocalCloud, tmp_path: Path, example: str) -> None:
    archive = write_bundle_zip(EXAMPLES / example / "bundle", tmp_path / f"{example}.zip")
    key = f"environments/{example}/v1/bundle.zip"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive.read_bytes())
    cloud.settle()


def _live_run(
    cloud: LocalCloud,
    run_id: str,
    base_url: str | None,
    example: str = "gsm8k-en",
    secret_arn: str | None = None,
    live: LiveModel | None = None,
) -> dict[str, Any]:
    live = live or LiveModel(
        secret_arn=secret_arn,
        connection_id="conn-local",
        provider="openai-compatible",
        model_id=BASE_MODEL,
        sampling=Sampling(temperature=0, max_tokens=256),
        base_url=base_url,
    )
    run = RunRecord(
        run_id=run_id,
        environment_id=example,
        environment_version="v1",
        model=BASE_MODEL,
        owner="alice",
        live_model=live,
    )
    assert _runs(cloud).create(run)
    machine = cloud.state_machine_arns["InferencePipeline"]
    cloud.client("stepfunctions").start_execution(
        stateMachineArn=machine, name=f"live-{run_id}", input=json.dumps({"run_id": run_id})
    )
    execution = cloud.wait_for_execution(f"live-{run_id}", timeout=120, state_machine_arn=machine)
    cloud.settle()
    return execution


def _object_lines(cloud: LocalCloud, key: str) -> list[dict[str, Any]]:
    body = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read().decode()
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def test_a_live_run_of_the_example_base_model_completes_with_the_example_submissions_score(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the gsm8k-en example registered (its example submission gets 12 of 40 cases wrong)
    _register(cloud, tmp_path, "gsm8k-en")

    # When a live run asks example-base every case through the InferencePipeline
    execution = _live_run(cloud, "live-happy", models.base_url)

    # Then the run completed with the score the example submission gets
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get("live-happy")
    assert run is not None
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.overall_score == pytest.approx(0.7)
    # and the generated submission is under submissions/<run_id>/, the ingest's input
    assert run.submission_key == "submissions/live-happy/predictions.json"
    assert run.files[RunOutput.SUBMISSION] == "submissions/live-happy/predictions.json"
    # and every case's raw response and latency are kept in the inference log the run links
    log = _object_lines(cloud, run.files[RunOutput.INFERENCE_LOG])
    assert len(log) == 40
    assert all(entry["answered"] and entry["latency_ms"] >= 0 for entry in log)
    assert json.loads(log[0]["raw"])["choices"][0]["message"]["content"] == log[0]["prediction_text"]
    assert run.inference is not None
    assert (run.inference.cases, run.inference.answered, run.inference.unanswered) == (40, 40, 0)
    # each case was asked once (in one shard of 40 at 4 in flight), plus the reachability call
    assert len(models.faults.requests) == 41
    # and the run's page names the model asked and how its cases were answered
    with cloud.serve_api(access_log=False) as server:
        api = Api(server.url, cloud.create_user("reader@example.com", "Reader-Passw0rd!x"))
        detail = api.expect("GET", "/runs/live-happy", 200)
    assert detail["live_model"] == {
        "connection_id": "conn-local",
        "provider": "openai-compatible",
        "model_id": "example-base",
    }
    # with the tokens the model reported, and no cost: the run's connection names no prices
    assert detail["inference"] == {
        "cases": 40,
        "answered": 40,
        "unanswered": 0,
        "unanswered_reasons": [],
        "input_tokens": sum(entry["input_tokens"] for entry in log),
        "output_tokens": sum(entry["output_tokens"] for entry in log),
        "reasoning_tokens": 0,
        "cases_without_tokens": 0,
        "cost": None,
        "cost_note": "no prices on the connection",
    }
    assert detail["inference"]["input_tokens"] > 0
    assert "Inference Log" in detail["files"]


def test_throttling_and_5xx_are_retried_and_a_case_that_keeps_failing_is_unanswered_with_its_reason(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the model throttles one case twice, answers 500 once to another, and always 500 to a third
    _register(cloud, tmp_path, "gsm8k-en")
    models.faults.add(Fault(status=429, case_id="en-000003", times=2, retry_after_s=0.05))
    models.faults.add(Fault(status=500, case_id="en-000007", times=1))
    models.faults.add(Fault(status=500, case_id="en-000011", times=None))

    # When the live run goes through
    execution = _live_run(cloud, "live-faults", models.base_url)

    # Then the run still completes
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get("live-faults")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    log = {entry["id"]: entry for entry in _object_lines(cloud, run.files[RunOutput.INFERENCE_LOG])}
    # the retried cases were answered on a later attempt
    assert (log["en-000003"]["answered"], log["en-000003"]["attempts"]) == (True, 3)
    assert (log["en-000007"]["answered"], log["en-000007"]["attempts"]) == (True, 2)
    # the case that kept failing is recorded unanswered, answered empty, with the reason
    failing = log["en-000011"]
    assert (failing["answered"], failing["prediction_text"], failing["attempts"]) == (False, "", 5)
    assert "answered HTTP 500" in failing["error"]
    assert run.inference is not None and run.inference.unanswered == 1
    assert run.inference.unanswered_reasons[0].startswith("en-000011: ")


def test_an_unreachable_model_fails_the_run_in_deploying_with_a_sentence(
    fast_retries: None, cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given a connection to a port where nothing listens
    _register(cloud, tmp_path, "gsm8k-en")
    with ExampleModelServer() as stopped:
        base_url = stopped.base_url

    # When a live run starts
    execution = _live_run(cloud, "live-down", base_url)

    # Then it fails before any case is asked, and the run says why and what to do
    assert execution["status"] == "FAILED"
    run = _runs(cloud).get("live-down")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert run.failure_reason.startswith(
        f"the model example-base at {base_url} did not answer: could not reach"
    )
    assert "(after 5 attempts)" in run.failure_reason
    assert run.failure_reason.endswith("then create the run again")
    assert run.finished_at is not None
    assert RunOutput.SUBMISSION not in run.files


def test_the_api_key_is_read_from_secrets_manager_when_called_and_is_kept_nowhere(
    fast_retries: None, cloud: LocalCloud, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # Given a model server that answers only with its key, and the key in a tagged Secrets Manager secret
    key = "sk-planted-" + secrets.token_hex(12)
    arn = cloud.client("secretsmanager").create_secret(
        Name="benchgen/example-models",
        SecretString=key,
        Tags=[{"Key": "benchgen:access", "Value": "inference"}],
    )["ARN"]
    _register(cloud, tmp_path, "gsm8k-en")
    caplog.clear()

    # When a live run's connection names the secret
    with ExampleModelServer(api_key=key) as models:
        execution = _live_run(cloud, "live-keyed", models.base_url, secret_arn=arn)

    # Then the model was called with the key (it refuses any other) and the run completed
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get("live-keyed")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    assert run.inference is not None and run.inference.answered == 40
    # and the key is in no item, object, execution input or output, nor in any log line
    assert arn in everything_stored(cloud)
    assert key not in everything_stored(cloud)
    # every record any logger wrote, with its extra fields (what the JSON log lines carry)
    logged = "\n".join(json.dumps(record.__dict__, default=str) for record in caplog.records)
    assert "live-keyed" in logged
    assert key not in logged


def test_an_environment_with_a_case_that_has_no_question_fails_the_run_in_plan_with_a_sentence(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given an environment whose third case has no question to ask a model
    bundle = tmp_path / "no-question" / "bundle"
    shutil.copytree(EXAMPLES / "gsm8k-en" / "bundle", bundle)
    cases_file = bundle / "reference" / "cases.jsonl"
    cases = [json.loads(line) for line in cases_file.read_text().splitlines()]
    del cases[2]["question"]
    cases_file.write_text("".join(json.dumps(case) + "\n" for case in cases))
    archive = write_bundle_zip(bundle, tmp_path / "no-question.zip")
    key = "environments/no-question/v1/bundle.zip"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive.read_bytes())
    cloud.settle()

    # When a live run of it starts
    execution = _live_run(cloud, "live-no-question", models.base_url, example="no-question")

    # Then the run fails saying which case and what to do, and no submission was generated
    assert execution["status"] == "FAILED"
    run = _runs(cloud).get("live-no-question")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason == (
        "case 'en-000002' has no question: a live run asks the model each case's question, so this "
        "environment needs uploaded predictions instead"
    )
    listed = cloud.client("s3").list_objects_v2(Bucket=cloud.bucket, Prefix="submissions/live-no-question/")
    assert listed.get("KeyCount", 0) == 0


def test_a_live_run_of_a_sagemaker_endpoint_goes_through_invoke_endpoint(
    fast_retries: None, cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given a SageMaker endpoint (moto's invoke_endpoint answers from a queue) that always answers 42
    answer = json.dumps([{"generated_text": "The answer is 42."}])
    queued: dict[str, Any] = {
        "region": cloud.region,
        "results": [{"Body": answer, "ContentType": "application/json"}] * 41,
    }
    requests.post("http://motoapi.amazonaws.com/moto-api/static/sagemaker/endpoint-results", json=queued)
    _register(cloud, tmp_path, "gsm8k-en")
    endpoint = LiveModel(
        connection_id="conn-sagemaker",
        provider="sagemaker",
        model_id="tuned-llama",
        region=cloud.region,
        endpoint_name="tuned-llama-endpoint",
        sampling=Sampling(temperature=0, max_tokens=64),
    )

    # When a live run asks it every case
    execution = _live_run(cloud, "live-sagemaker", None, live=endpoint)

    # Then the run completed, scored on what the endpoint answered (no case's answer is 42)
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get("live-sagemaker")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    assert run.overall_score == 0.0
    log = _object_lines(cloud, run.files[RunOutput.INFERENCE_LOG])
    assert {entry["prediction_text"] for entry in log} == {"The answer is 42."}
    assert {entry["raw"] for entry in log} == {answer}
    # and the endpoint's answers count no tokens, which the run says rather than calling them free
    assert run.inference is not None
    assert (run.inference.input_tokens, run.inference.cases_without_tokens) == (0, 40)


# ---- through the API -------------------------------------------------------------------------------------


def _subject(token: str) -> str:
    """The user id (claims.sub) of an ID token: the owner the API records."""
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["sub"])


def _connect(cloud: LocalCloud, owner: str, connection_id: str, base_url: str) -> None:
    connections = ConnectionsRepo(
        next(n for lid, n in cloud.table_names.items() if lid.startswith("Connections"))
    )
    assert connections.put(
        ConnectionRecord(
            connection_id=connection_id,
            owner=owner,
            name="example models",
            provider=OPENAI_COMPATIBLE,
            base_url=base_url,
            profile=registry.provider(OPENAI_COMPATIBLE).capabilities,
        )
    )


@pytest.fixture
def users(cloud: LocalCloud) -> Iterator[tuple[Api, str, Api]]:
    with cloud.serve_api(access_log=False) as server:
        token = cloud.create_user("owner@example.com", "Owner-Passw0rd!x")
        other = cloud.create_user("other@example.com", "Other-Passw0rd!x")
        yield Api(server.url, token), _subject(token), Api(server.url, other)


def _post_live_run(api: Api, connection_id: str, **extra: Any) -> tuple[int, Any]:
    body = {
        "environment_id": "gsm8k-en",
        "version": "v1",
        "model": "example-base",
        "model_config": {
            "connection_id": connection_id,
            "model_id": BASE_MODEL,
            "sampling": {"temperature": 0, "max_tokens": 256},
            **extra,
        },
    }
    return api.call("POST", "/runs", body)


def test_post_runs_with_a_model_config_generates_the_submission_and_completes_with_a_score(
    fast_retries: None,
    cloud: LocalCloud,
    models: ExampleModelServer,
    tmp_path: Path,
    users: tuple[Api, str, Api],
) -> None:
    # Given the owner's connection to the simulated models (POST /connections) and a registered example
    api, _, _ = users
    _register(cloud, tmp_path, "gsm8k-en")
    connection = api.expect(
        "POST",
        "/connections",
        201,
        {"name": "example models", "provider": "openai-compatible", "base_url": models.base_url},
    )

    # When the owner creates a live run
    status, created = _post_live_run(
        api, connection["connection_id"], environment_variables={"LOG_LEVEL": "info"}
    )

    # Then it is created with nothing to upload, and its InferencePipeline execution runs to the score
    assert status == 201, created
    assert (created["upload_url"], created["upload_key"]) == (None, None)
    run_id = created["run"]["run_id"]
    machine = cloud.state_machine_arns["InferencePipeline"]
    assert cloud.wait_for_execution(f"live-{run_id}", timeout=120, state_machine_arn=machine)["status"] == (
        "SUCCEEDED"
    )
    cloud.settle()
    detail = api.expect("GET", f"/runs/{run_id}", 200)
    assert detail["status"] == "Completed"
    assert detail["overall_score"] == pytest.approx(0.7)
    assert detail["live_model"] == {
        "connection_id": connection["connection_id"],
        "provider": "openai-compatible",
        "model_id": "example-base",
    }
    # and its sampling and environment variables are the owner's configuration
    config = api.expect("GET", f"/runs/{run_id}/config", 200)
    assert config == {
        "sampling": {"temperature": 0.0, "max_tokens": 256},
        "environment_variables": {"LOG_LEVEL": "info"},
        "inference_mode": "auto",
        "limits": {"max_in_flight": 4, "requests_per_minute": None, "tokens_per_minute": None},
        "timeout_s": 60.0,
        "prices": None,
    }


def test_post_runs_refuses_another_users_connection_and_a_secret_passed_in_the_clear(
    cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path, users: tuple[Api, str, Api]
) -> None:
    # Given the owner's connection
    api, owner, other = users
    _register(cloud, tmp_path, "gsm8k-en")
    _connect(cloud, owner, "conn-owned", models.base_url)

    # When another user names it, or the owner passes an API key as a plain environment variable
    status_other, answer_other = _post_live_run(other, "conn-owned")
    status_key, answer_key = _post_live_run(
        api, "conn-owned", environment_variables={"OPENAI_API_KEY": "sk-x1"}
    )

    # Then both are refused, saying what to do, and no run was recorded
    assert status_other == 404
    assert answer_other["message"].startswith("no connection 'conn-owned' of yours")
    assert status_key == 422
    assert "OPENAI_API_KEY looks like a secret" in json.dumps(answer_key)
    assert "sk-x1" not in json.dumps(answer_key)
    assert api.expect("GET", "/runs", 200)["items"] == []


def test_post_runs_keeps_the_runs_limits_and_refuses_limits_out_of_bounds_naming_them(
    cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path, users: tuple[Api, str, Api]
) -> None:
    # Given the owner's connection
    api, owner, _ = users
    _register(cloud, tmp_path, "gsm8k-en")
    _connect(cloud, owner, "conn-owned", models.base_url)

    # When the owner asks for no request at all in flight, for more than a run may have, or an unknown bound,
    # or gives an empty stop sequence or one longer than any answer's ending needs
    refused = [
        _post_live_run(api, "conn-owned", limits=limits)
        for limits in ({"max_in_flight": 0}, {"max_in_flight": 5000}, {"max_in_flight": 8, "burst": 1})
    ] + [_post_live_run(api, "conn-owned", sampling={"stop": stop}) for stop in ([""], ["#" * 65])]
    # Then each is a 422 naming the field, and no run was recorded
    fields = ("max_in_flight", "max_in_flight", "burst", "stop", "stop")
    for (status, answer), field in zip(refused, fields, strict=True):
        assert status == 422, answer
        assert field in json.dumps(answer)
    assert api.expect("GET", "/runs", 200)["items"] == []

    # And a run within the bounds keeps them for its shards
    status, created = _post_live_run(
        api, "conn-owned", limits={"max_in_flight": 32, "requests_per_minute": 600}
    )
    assert status == 201, created
    cloud.settle()
    run = _runs(cloud).get(created["run"]["run_id"])
    assert run is not None and run.live_model is not None
    assert (run.live_model.limits.max_in_flight, run.live_model.limits.requests_per_minute) == (32, 600)


def test_an_answer_cut_short_is_retried_and_a_case_always_cut_short_is_unanswered_with_a_sentence(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the model's answers to one case are cut short twice, and to another every time
    _register(cloud, tmp_path, "gsm8k-en")
    models.faults.add(Fault(cut_short=True, case_id="en-000005", times=2))
    models.faults.add(Fault(cut_short=True, case_id="en-000009", times=None))

    # When the live run goes through
    execution = _live_run(cloud, "live-short", models.base_url)

    # Then the run completes: the first case was answered on its third attempt
    assert execution["status"] == "SUCCEEDED"
    run = _runs(cloud).get("live-short")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    log = {entry["id"]: entry for entry in _object_lines(cloud, run.files[RunOutput.INFERENCE_LOG])}
    assert (log["en-000005"]["answered"], log["en-000005"]["attempts"]) == (True, 3)
    # and the other is unanswered after every attempt, saying the answer was cut short
    failing = log["en-000009"]
    assert (failing["answered"], failing["attempts"]) == (False, 5)
    assert re.fullmatch(
        rf"{re.escape(models.base_url)}/chat/completions cut its answer short \(\d+ bytes of \d+ read\): the "
        r"connection closed before the answer ended \(after 5 attempts\)",
        failing["error"],
    )
    assert run.inference is not None and run.inference.unanswered == 1


def test_a_live_run_whose_answers_pass_the_prediction_limit_fails_with_the_limits_message(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a model whose answers to two cases are 4.5 MiB each (the generated submission passes 8 MiB,
    # so it is uploaded in parts)
    _register(cloud, tmp_path, "gsm8k-en")
    for case_id in ("en-000002", "en-000004"):
        models.faults.add(Fault(case_id=case_id, times=None, answer_chars=4608 * 1024))
    ingest = next(name for lid, name in cloud.functions.items() if lid.startswith("Ingest"))
    handler = cloud.hook.handlers[ingest]
    announced: list[str] = []

    def watched(event: Any, context: Any) -> Any:
        announced.extend(record["eventName"] for record in event["Records"])
        return handler(event, context)

    cloud.hook.register(ingest, watched)

    # When the live run goes through
    _live_run(cloud, "live-huge", models.base_url)

    # Then its submission, over 8 MiB, was announced once, as the completion of a multipart upload
    head = cloud.client("s3").head_object(Bucket=cloud.bucket, Key="submissions/live-huge/predictions.json")
    assert head["ContentLength"] > 8 * 1024 * 1024
    assert announced == ["ObjectCreated:CompleteMultipartUpload"]
    # and the run fails with the limit's own sentence
    run = _runs(cloud).get("live-huge")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason is not None
    assert "is larger than the limit of 4 MiB for one prediction" in run.failure_reason, run.failure_reason


def test_a_providers_message_quoting_the_key_reaches_no_record_answer_or_log_line_with_it(
    fast_retries: None,
    cloud: LocalCloud,
    tmp_path: Path,
    users: tuple[Api, str, Api],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    # Given the owner's connection (POST /connections) whose key, in a tagged secret, the model server
    # quotes back in its 401 ("invalid API key: Bearer <key>")
    api, _, other = users
    key = "sk-planted-" + secrets.token_hex(12)
    arn = cloud.client("secretsmanager").create_secret(
        Name="benchgen/quoting-models",
        SecretString=key,
        Tags=[{"Key": "benchgen:access", "Value": "inference"}],
    )["ARN"]
    _register(cloud, tmp_path, "gsm8k-en")
    with KeyQuotingServer() as models:
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
        )

        # When a live run asks that model
        status, created = _post_live_run(api, connection["connection_id"])
        assert status == 201, created
        run_id = created["run"]["run_id"]
        machine = cloud.state_machine_arns["InferencePipeline"]
        execution = cloud.wait_for_execution(f"live-{run_id}", timeout=120, state_machine_arn=machine)
        cloud.settle()

    # Then the run failed, and the answer another user gets (runs are readable by every user) lacks the key
    assert execution["status"] == "FAILED"
    detail = other.expect("GET", f"/runs/{run_id}", 200)
    assert detail["status"] == "Failed"
    assert key not in json.dumps(detail)
    # but keeps the provider's own words, the key taken out of them
    assert "answered HTTP 401" in detail["failure_reason"]
    assert "invalid API key: Bearer [redacted]" in detail["failure_reason"]
    # and the key is in no item, object or execution history, no log line
    stored = everything_stored(cloud)
    assert arn in stored and "invalid API key: Bearer [redacted]" in stored
    assert key not in stored
    logged = "\n".join(json.dumps(record.__dict__, default=str) for record in caplog.records)
    assert run_id in logged
    assert key not in logged


# ---- cost and the connection's limits --------------------------------------------------------------------

PRICES = {
    "currency": "USD",
    "on_demand": {"input_per_million": 0.06, "output_per_million": 0.24},
    "batch": {"input_per_million": 0.03, "output_per_million": 0.12},
}


def test_a_live_run_costs_its_reported_tokens_at_the_prices_its_connection_named_when_it_was_created(
    fast_retries: None,
    cloud: LocalCloud,
    models: ExampleModelServer,
    tmp_path: Path,
    users: tuple[Api, str, Api],
) -> None:
    # Given the owner's connection naming its model's prices, and a live run created on it
    api, _, other = users
    _register(cloud, tmp_path, "gsm8k-en")
    connection = api.expect(
        "POST",
        "/connections",
        201,
        {"name": "priced", "provider": "openai-compatible", "base_url": models.base_url, "prices": PRICES},
    )
    assert connection["prices"] == PRICES
    status, created = _post_live_run(api, connection["connection_id"])
    assert status == 201, created
    run_id = created["run"]["run_id"]

    # When the connection is deleted while the run is being answered
    api.expect("DELETE", f"/connections/{connection['connection_id']}", 204)
    machine = cloud.state_machine_arns["InferencePipeline"]
    assert cloud.wait_for_execution(f"live-{run_id}", timeout=120, state_machine_arn=machine)["status"] == (
        "SUCCEEDED"
    )
    cloud.settle()

    # Then the run's page (anyone's to read) shows its tokens and their on-demand cost at the prices the
    # run was created with, summed from its inference log
    detail = other.expect("GET", f"/runs/{run_id}", 200)
    assert detail["status"] == "Completed"
    run = _runs(cloud).get(run_id)
    assert run is not None
    log = _object_lines(cloud, run.files[RunOutput.INFERENCE_LOG])
    input_tokens = sum(entry["input_tokens"] for entry in log)
    output_tokens = sum(entry["output_tokens"] for entry in log)
    inference = detail["inference"]
    assert (inference["input_tokens"], inference["output_tokens"]) == (input_tokens, output_tokens)
    assert inference["cases_without_tokens"] == 0
    assert inference["cost_note"] is None
    cost = inference["cost"]
    assert (cost["currency"], cost["mode"]) == ("USD", "on_demand")
    assert cost["input_cost"] == pytest.approx(input_tokens * 0.06 / 1e6)
    assert cost["output_cost"] == pytest.approx(output_tokens * 0.24 / 1e6)
    assert cost["total"] == pytest.approx(cost["input_cost"] + cost["output_cost"])
    assert cost["total"] > 0
    # and the prices it was costed at are its owner's to read, not another user's
    assert api.expect("GET", f"/runs/{run_id}/config", 200)["prices"] == PRICES
    assert other.call("GET", f"/runs/{run_id}/config")[0] == 403
    assert "per_million" not in json.dumps(detail)


@pytest.mark.parametrize(
    ("member", "value", "field"),
    [
        ("prices", {"on_demand": {"input_per_million": -1, "output_per_million": 1}}, "input_per_million"),
        (
            "prices",
            {"on_demand": {"input_per_million": 1, "output_per_million": 20_000}},
            "output_per_million",
        ),
        (
            "prices",
            {"currency": "EUR", "on_demand": {"input_per_million": 1, "output_per_million": 1}},
            "currency",
        ),
        ("prices", {"on_demand": {"input_per_million": 1}}, "output_per_million"),
        ("prices", {"on_demand": {"input_per_million": 1, "output_per_million": 1, "cached": 1}}, "cached"),
        ("prices", {"batch": {"input_per_million": 1, "output_per_million": 1}}, "on_demand"),
        (
            "prices",
            {"on_demand": {"input_per_million": "cheap", "output_per_million": 1}},
            "input_per_million",
        ),
        ("prices", {"on_demand": {"input_per_million": "0.5", "output_per_million": 1}}, "input_per_million"),
        ("prices", {"on_demand": {"input_per_million": True, "output_per_million": 1}}, "input_per_million"),
        ("limits", {"max_in_flight": 0}, "max_in_flight"),
        ("limits", {"requests_per_minute": -5}, "requests_per_minute"),
        ("limits", {"tokens_per_minute": 10**10}, "tokens_per_minute"),
        ("limits", {"burst": 3}, "burst"),
        ("limits", {"max_in_flight": "8"}, "max_in_flight"),
        ("limits", {"max_in_flight": True}, "max_in_flight"),
    ],
)
def test_post_connections_refuses_prices_and_limits_out_of_bounds_naming_the_field(
    cloud: LocalCloud, users: tuple[Api, str, Api], member: str, value: dict[str, Any], field: str
) -> None:
    # Given a user
    api, _, _ = users
    # When the user names prices that are negative, absurd, not in USD, incomplete or unknown, or limits
    # out of bounds, unknown, or not numbers
    status, answer = api.call(
        "POST",
        "/connections",
        {
            "name": "bad",
            "provider": "openai-compatible",
            "base_url": "https://api.example.com/v1",
            member: value,
        },
    )
    # Then the connection is refused naming the field, and none was kept
    assert status == 422, answer
    assert field in json.dumps(answer)
    assert api.expect("GET", "/connections", 200)["items"] == []


def test_a_connections_limits_are_its_runs_defaults_and_a_run_asking_more_is_refused_naming_the_bound(
    cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path, users: tuple[Api, str, Api]
) -> None:
    # Given the owner's connection whose provider allows 8 requests at once and 600 a minute
    api, _, _ = users
    _register(cloud, tmp_path, "gsm8k-en")
    connection = api.expect(
        "POST",
        "/connections",
        201,
        {
            "name": "bounded",
            "provider": "openai-compatible",
            "base_url": models.base_url,
            "limits": {"max_in_flight": 8, "requests_per_minute": 600},
        },
    )
    connection_id = connection["connection_id"]
    assert connection["limits"] == {"max_in_flight": 8, "requests_per_minute": 600, "tokens_per_minute": None}

    # When runs ask for more requests at once, or a faster rate, than the connection allows
    refused = [
        _post_live_run(api, connection_id, limits=limits)
        for limits in ({"max_in_flight": 9}, {"max_in_flight": 4, "requests_per_minute": 601})
    ]
    # Then each is a 400 whose sentence names the connection's bound, and no run was recorded
    assert refused[0][0] == 400, refused[0]
    assert refused[0][1]["message"] == (
        f"limits.max_in_flight is 9, above the bound of 8 that connection {connection_id} sets: ask for at "
        "most 8, or leave it out to use 8"
    )
    assert refused[1][0] == 400, refused[1]
    assert "limits.requests_per_minute is 601, above the bound of 600" in refused[1][1]["message"]
    assert api.expect("GET", "/runs", 200)["items"] == []

    # And a run that states no limits takes the connection's; one within them keeps its own, and a quota
    # the connection leaves open is the run's to state
    defaulted = _post_live_run(api, connection_id)
    within = _post_live_run(api, connection_id, limits={"max_in_flight": 2, "tokens_per_minute": 50_000})
    # and a quota sent as null is left out, not lifted
    unlifted = _post_live_run(api, connection_id, limits={"requests_per_minute": None})
    kept = []
    for status, created in (defaulted, within, unlifted):
        assert status == 201, created
        run = _runs(cloud).get(created["run"]["run_id"])
        assert run is not None and run.live_model is not None
        kept.append(run.live_model.limits.model_dump())
    cloud.settle()
    assert kept == [
        {"max_in_flight": 8, "requests_per_minute": 600, "tokens_per_minute": None},
        {"max_in_flight": 2, "requests_per_minute": 600, "tokens_per_minute": 50_000},
        {"max_in_flight": 8, "requests_per_minute": 600, "tokens_per_minute": None},
    ]
