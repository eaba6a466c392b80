"""The example model server's simulated Batch API, seen through the OpenAI-compatible batch adapter: it
answers like OpenAI's, and is stricter where a batch could be malformed (line shape, limits, fields)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from benchgen.aws.providers.openai_compatible import OpenAIBatchJobs, OpenAICompatibleJobs
from benchgen.inference.prompts import prompt_for
from benchgen.inference.retry import Backoff
from benchgen.providers import openai_batch
from benchgen.providers.batch import BatchJobSpec, BatchStatus
from benchgen.vocabulary import Sampling
from localcloud.model_server import BASE_MODEL, ExampleModelServer, Fault

NO_WAIT = Backoff(attempts=2, base_s=0.0, cap_s=0.0)
CASES = Path(__file__).resolve().parents[2] / "examples" / "gsm8k-en" / "bundle" / "reference" / "cases.jsonl"


@pytest.fixture
def server() -> Iterator[ExampleModelServer]:
    with ExampleModelServer() as running:
        yield running


def _jobs(server: ExampleModelServer) -> OpenAIBatchJobs:
    return OpenAIBatchJobs(OpenAICompatibleJobs(server.base_url, api_key=lambda: None, backoff=NO_WAIT))


def _spec(name: str = "benchgen-0123456789abcdef-000", records: int = 3) -> BatchJobSpec:
    return BatchJobSpec(
        name=name,
        model_id=BASE_MODEL,
        records=records,
        input_key="unused",
        input_uri="unused",
        output_uri="unused",
    )


def _records(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _ask(prompts: list[str]) -> list[dict[str, Any]]:
    sampling = Sampling(temperature=0, max_tokens=64)
    return [
        openai_batch.BATCH.record(index, BASE_MODEL, prompt, sampling) for index, prompt in enumerate(prompts)
    ]


def _until_ended(jobs: OpenAIBatchJobs, batch_id: str) -> Any:
    for _ in range(10):
        state = jobs.describe(_spec(), batch_id)
        if state.status is not BatchStatus.RUNNING:
            return state
    raise AssertionError("the simulated batch never ended")


def test_a_batch_is_answered_through_the_batch_api_failed_requests_in_the_error_file(
    server: ExampleModelServer, tmp_path: Path
) -> None:
    # Given three example questions, the second of which the model refuses
    cases = [json.loads(line) for line in CASES.read_text().splitlines()[:3]]
    server.faults.add(Fault(status=400, case_id=cases[1]["id"], times=None))
    jobs = _jobs(server)
    records = _records(tmp_path / "records.jsonl", _ask([prompt_for(case) for case in cases]))

    # When the batch is submitted (twice: a retried step) and read until it ends
    first = jobs.submit(_spec(), records)
    again = jobs.submit(_spec(), records)
    state = _until_ended(jobs, first)

    # Then one batch was made, and its two files hold every request's answer or refusal
    assert first == again == "batch_000001"
    assert len(server.batches.bodies) == 1
    assert (state.provider_status, state.succeeded, state.failed) == ("completed", 2, 1)
    assert state.output_file is not None and state.error_file is not None
    results = {}
    for file_id in (state.output_file, state.error_file):
        for line in jobs.download(file_id, tmp_path / file_id).read_text().splitlines():
            results.update({result.index: result for result in openai_batch.BATCH.results(json.loads(line))})
    assert sorted(results) == [0, 1, 2]
    assert results[0].answer is not None and results[2].answer is not None
    assert results[1].error == "the Batch API: HTTP 400: injected fault 400"


def test_a_request_line_with_a_field_the_batch_api_does_not_take_fails_the_batch_at_its_line(
    server: ExampleModelServer, tmp_path: Path
) -> None:
    lines = _ask(["What is 1 + 1?", "What is 2 + 2?"])
    lines[1]["priority"] = "high"
    jobs = _jobs(server)

    state = _until_ended(jobs, jobs.submit(_spec(records=2), _records(tmp_path / "r.jsonl", lines)))

    assert (state.provider_status, state.status) == ("failed", BatchStatus.FAILED)
    assert state.message is not None and state.message.startswith("a request is exactly custom_id")
    assert "(line 2, invalid_request)" in state.message


def test_a_batch_over_the_request_limit_fails_and_a_create_with_an_unknown_field_is_refused(
    server: ExampleModelServer, tmp_path: Path
) -> None:
    server.batches.max_requests = 2
    jobs = _jobs(server)
    lines = _ask(["a?", "b?", "c?"])

    state = _until_ended(jobs, jobs.submit(_spec(), _records(tmp_path / "r.jsonl", lines)))
    refused = requests.post(
        f"{server.base_url}/batches",
        json={
            "input_file_id": "file-x",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "x": 1,
        },
        timeout=5,
    )

    assert state.message == "the file has 3 requests; a batch takes 2 (line None, too_many_requests)"
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "unknown fields: x"


def test_a_batch_told_to_fail_ends_failed_with_the_message(
    server: ExampleModelServer, tmp_path: Path
) -> None:
    server.batches.fail("the batch service is overloaded")
    jobs = _jobs(server)

    state = _until_ended(jobs, jobs.submit(_spec(), _records(tmp_path / "r.jsonl", _ask(["a?"]))))

    assert (state.provider_status, state.status) == ("failed", BatchStatus.FAILED)
    assert state.message == "the batch service is overloaded (line None, batch_failed)"
