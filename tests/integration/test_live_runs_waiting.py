"""Live runs whose model keeps them waiting, on the local cloud through the REST API: a call is given up
after its connection's ``timeout_s`` however the server stalls, and the run view says what the run is
waiting for while it waits."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.api_client import Api
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, ExampleModelServer, Fault

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STALLED_CASE = "en-000004"


@pytest.fixture
def api(cloud: LocalCloud, tmp_path: Path) -> Iterator[Api]:
    archive = write_bundle_zip(EXAMPLES / "gsm8k-en" / "bundle", tmp_path / "gsm8k-en.zip")
    key = "environments/gsm8k-en/v1/bundle.zip"
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=key, Body=archive.read_bytes())
    cloud.settle()
    with cloud.serve_api(access_log=False) as server:
        yield Api(server.url, cloud.create_user("owner@example.com", "Owner-Passw0rd!x"))


def _start_live_run(api: Api, base_url: str, timeout_s: float) -> str:
    connection = api.expect(
        "POST",
        "/connections",
        201,
        {
            "name": "example models",
            "provider": "openai-compatible",
            "base_url": base_url,
            "timeout_s": timeout_s,
        },
    )
    body = {
        "environment_id": "gsm8k-en",
        "version": "v1",
        "model": "example-base",
        "model_config": {
            "connection_id": connection["connection_id"],
            "model_id": BASE_MODEL,
            "sampling": {"temperature": 0, "max_tokens": 256},
        },
    }
    created = api.expect("POST", "/runs", 201, body)
    return str(created["run"]["run_id"])


def _finished(cloud: LocalCloud, run_id: str) -> dict[str, Any]:
    machine = cloud.state_machine_arns["InferencePipeline"]
    execution = cloud.wait_for_execution(f"live-{run_id}", timeout=120, state_machine_arn=machine)
    cloud.settle()
    return execution


def test_a_model_that_reads_each_request_and_never_answers_fails_the_run_in_deploying_saying_so(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, api: Api
) -> None:
    # Given a model server that reads every request and answers none for far longer than the
    # connection's timeout
    models.faults.add(Fault(delay_s=5.0, times=None))

    # When the owner starts a live run on a connection whose calls may take 0.3 s
    run_id = _start_live_run(api, models.base_url, timeout_s=0.3)

    # Then the run fails in Deploying, saying the model gave no answer within the connection's timeout
    assert _finished(cloud, run_id)["status"] == "FAILED"
    detail = api.expect("GET", f"/runs/{run_id}", 200)
    assert detail["status"] == "Failed"
    assert detail["failure_reason"].startswith(
        f"the model example-base at {models.base_url} did not answer: {models.base_url}/chat/completions "
        "gave no whole answer within 0.3 s, the connection's timeout_s (after 5 attempts)."
    )


def test_a_case_whose_answer_stalls_after_its_headers_is_unanswered_for_the_connections_timeout(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, api: Api
) -> None:
    # Given a model server that sends one case's headers at once, then its body a byte every 50 ms
    # (never silent long enough for a socket's timeout, and 20 s in all)
    models.faults.add(Fault(case_id=STALLED_CASE, trickle_s=0.05, times=None))

    # When a live run asks it on a connection whose calls may take 0.5 s
    run_id = _start_live_run(api, models.base_url, timeout_s=0.5)

    # Then the run completes, that case unanswered for the connection's timeout and every other answered
    assert _finished(cloud, run_id)["status"] == "SUCCEEDED"
    detail = api.expect("GET", f"/runs/{run_id}", 200)
    assert detail["status"] == "Completed", detail["failure_reason"]
    assert (detail["inference"]["answered"], detail["inference"]["unanswered"]) == (39, 1)
    assert detail["inference"]["unanswered_reasons"] == [
        f"{STALLED_CASE}: {models.base_url}/chat/completions gave no whole answer within 0.5 s, the "
        "connection's timeout_s (after 5 attempts)"
    ]


def test_while_a_case_waits_the_run_view_shows_what_was_asked_answered_and_waited_for(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, api: Api
) -> None:
    # Given a model server that stalls one case's answer until the connection's 1 s timeout, every time
    models.faults.add(Fault(case_id=STALLED_CASE, trickle_s=0.05, times=None))
    run_id = _start_live_run(api, models.base_url, timeout_s=1)

    # When the owner looks at the run while it is being answered
    waiting = None
    while waiting is None:
        detail = api.expect("GET", f"/runs/{run_id}", 200)
        progress = detail.get("progress")
        if detail["status"] == "Running" and progress and progress["waiting"] >= 1:
            waiting = progress
        assert detail["status"] in ("Pending", "Deploying", "Running"), "the run ended before it was seen"
        time.sleep(0.1)

    # Then the view says what the run waits for: the cases asked, answered and waiting, and the deadline
    # of the latest call
    assert waiting["waiting_for"] == "the model's answers to the run's cases"
    assert waiting["cases"] == 40
    assert waiting["asked"] == waiting["answered"] + waiting["unanswered"] + waiting["waiting"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", waiting["call_deadline"])
    # and once every case was heard, the run's progress adds up to its cases
    assert _finished(cloud, run_id)["status"] == "SUCCEEDED"
    final = api.expect("GET", f"/runs/{run_id}", 200)["progress"]
    assert (final["asked"], final["answered"], final["unanswered"], final["waiting"]) == (40, 39, 1, 0)
