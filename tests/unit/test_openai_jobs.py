"""OpenAI-compatible training jobs: the request body against Together's documented fields, and the
adapter against the example server's simulated fine-tuning (upload, start once, poll, fail, cancel)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from benchgen.aws.providers.openai_compatible import OpenAICompatibleJobs
from benchgen.inference.retry import Backoff
from benchgen.providers.jobs import JobSpec, ProviderFault, job_name_for
from benchgen.providers.openai_compatible import fine_tune_request
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method
from localcloud.model_server import TUNED_MODEL, ExampleModelServer
from localcloud.providers.openai_compatible import SIMULATED_TRAINING

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "together_fine_tunes_request.schema.json").read_text()
)
VALIDATOR = Draft202012Validator(SCHEMA)
RFT_VALIDATOR = Draft202012Validator(
    json.loads((Path(__file__).resolve().parents[1] / "data" / "openai_rft_request.schema.json").read_text())
)
GRADER = "def grade(sample, item):\n    return float(item['grading']['answer'] in sample['output_text'])\n"
RUN_ID = "train-aabbccddeeff00112233aabb"
NO_WAIT = Backoff(attempts=3, base_s=0.0, cap_s=0.0)
KEY = "sk-local-test-key"


def spec(**changes: Any) -> JobSpec:
    fields: dict[str, Any] = {
        "training_run_id": RUN_ID,
        "job_name": job_name_for(RUN_ID),
        "method": Method.DEMONSTRATION,
        "base_model": "example-base",
        "hyperparameters": {"n_epochs": "2", "learning_rate": "1e-05"},
        "train_uri": "file-train",
        "validation_uri": None,
        "output_uri": "",
    }
    return JobSpec(**(fields | changes))


def problems(body: dict[str, Any]) -> list[str]:
    return sorted(error.message for error in VALIDATOR.iter_errors(body))


@pytest.fixture
def server() -> Iterator[ExampleModelServer]:
    with ExampleModelServer(api_key=KEY) as running:
        yield running


@pytest.fixture
def jobs(server: ExampleModelServer) -> OpenAICompatibleJobs:
    return OpenAICompatibleJobs(server.base_url, api_key=lambda: KEY, backoff=NO_WAIT, sleep=lambda _: None)


def uploaded(jobs: OpenAICompatibleJobs, **changes: Any) -> JobSpec:
    train = jobs.upload("train.jsonl", b'{"messages": []}\n')
    assert train is not None
    return spec(train_uri=train, **changes)


def test_an_sft_body_has_only_documented_fields_of_the_documented_types() -> None:
    body = fine_tune_request(spec(validation_uri="file-validation"))
    assert problems(body) == []
    assert body == {
        "training_file": "file-train",
        "validation_file": "file-validation",
        "model": "example-base",
        "suffix": "benchgen-train-aabbccddeeff00112233aabb",
        "training_method": {"method": "sft"},
        "n_epochs": 2,
        "learning_rate": 1e-05,
    }


def test_a_dpo_body_carries_its_beta_inside_the_training_method() -> None:
    body = fine_tune_request(spec(method=Method.PREFERENCE, hyperparameters={"dpo_beta": "0.1"}))
    assert problems(body) == []
    assert body["training_method"] == {"method": "dpo", "dpo_beta": 0.1}


def test_a_reinforcement_body_is_openai_s_method_object_with_the_package_s_python_grader() -> None:
    body = fine_tune_request(
        spec(
            method=Method.REINFORCEMENT,
            hyperparameters={"n_epochs": "1", "num_generations": "4", "beta": "0"},
            grader_source=GRADER,
        )
    )

    assert sorted(error.message for error in RFT_VALIDATOR.iter_errors(body)) == []
    assert body == {
        "training_file": "file-train",
        "model": "example-base",
        "suffix": "benchgen-train-aabbccddeeff00112233aabb",
        "method": {
            "type": "reinforcement",
            "reinforcement": {
                "grader": {"type": "python", "name": "benchgen-environment-scoring", "source": GRADER},
                "hyperparameters": {"n_epochs": 1, "num_generations": 4, "beta": 0.0},
            },
        },
    }


def test_the_rft_schema_check_refuses_what_neither_openai_nor_the_server_names() -> None:
    body = fine_tune_request(spec(method=Method.REINFORCEMENT, grader_source=GRADER))
    body["method"]["reinforcement"]["grader"]["code"] = "x"
    body["method"]["reinforcement"]["hyperparameters"] = {"epochs": 2}

    assert sorted(error.message for error in RFT_VALIDATOR.iter_errors(body)) == [
        "Additional properties are not allowed ('code' was unexpected)",
        "Additional properties are not allowed ('epochs' was unexpected)",
    ]


def test_a_reinforcement_job_without_a_grader_is_refused_before_it_is_sent() -> None:
    with pytest.raises(
        ProviderFault, match=r"a reinforcement job needs its grader: the package holds no grader\.py"
    ):
        fine_tune_request(spec(method=Method.REINFORCEMENT))


def test_a_demonstration_field_on_a_reinforcement_job_is_refused() -> None:
    with pytest.raises(
        ProviderFault, match="reinforcement training does not take warmup_ratio: it takes batch_size, beta, "
    ):
        fine_tune_request(
            spec(method=Method.REINFORCEMENT, hyperparameters={"warmup_ratio": "0.1"}, grader_source=GRADER)
        )


def test_a_field_no_training_method_takes_is_refused_by_name_before_it_is_sent() -> None:
    with pytest.raises(
        ProviderFault, match="demonstration training does not take epochs: it takes batch_size, "
    ):
        fine_tune_request(spec(hyperparameters={"epochs": "2"}))


def test_the_schema_check_refuses_what_together_does_not_document() -> None:
    body = fine_tune_request(spec()) | {"epochs": 2, "suffix": "x" * 41}
    assert problems(body) == [
        "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' is too long",
        "Additional properties are not allowed ('epochs' was unexpected)",
    ]


def test_dpo_beta_on_demonstration_training_is_refused() -> None:
    with pytest.raises(ProviderFault, match="demonstration training does not take dpo_beta"):
        fine_tune_request(spec(hyperparameters={"dpo_beta": "0.1"}))


def test_an_uploaded_file_reaches_the_provider_as_a_fine_tune_file(
    jobs: OpenAICompatibleJobs, server: ExampleModelServer
) -> None:
    file_id = jobs.upload("train.jsonl", b'{"messages": [{"role": "user", "content": "2+2"}]}\n')
    assert file_id is not None and file_id.startswith("file-")
    assert server.fine_tunes.files[file_id] == b'{"messages": [{"role": "user", "content": "2+2"}]}\n'


def test_a_job_runs_for_a_few_polls_then_names_the_tuned_example_model(
    jobs: OpenAICompatibleJobs, server: ExampleModelServer
) -> None:
    job_spec = uploaded(jobs)
    started = jobs.start(job_spec)
    assert (started.provider_status, started.status) == ("pending", TrainingStatus.QUEUED)
    polls = [jobs.describe(job_spec, started.job_id) for _ in range(3)]
    assert [(p.provider_status, p.status) for p in polls] == [
        ("queued", TrainingStatus.QUEUED),
        ("running", TrainingStatus.RUNNING),
        ("completed", TrainingStatus.SUCCEEDED),
    ]
    assert polls[-1].result_model == TUNED_MODEL
    assert problems(server.fine_tunes.bodies[0]) == []
    assert server.fine_tunes.listing()["data"][0]["notice"] == SIMULATED_TRAINING


def test_starting_the_same_job_twice_makes_one_job(
    jobs: OpenAICompatibleJobs, server: ExampleModelServer
) -> None:
    job_spec = uploaded(jobs)
    first = jobs.start(job_spec)
    second = jobs.start(job_spec)
    assert second.job_id == first.job_id
    assert len(server.fine_tunes.bodies) == 1


def test_a_job_the_provider_fails_reports_its_message(
    jobs: OpenAICompatibleJobs, server: ExampleModelServer
) -> None:
    server.fine_tunes.fail("Training file has 3 rows; at least 10 are required")
    job_spec = uploaded(jobs)
    jobs.start(job_spec)
    last = [jobs.describe(job_spec, None) for _ in range(3)][-1]
    assert (last.provider_status, last.status) == ("error", TrainingStatus.FAILED)
    assert last.failure_reason == "Training file has 3 rows; at least 10 are required"


def test_a_held_job_keeps_running(jobs: OpenAICompatibleJobs, server: ExampleModelServer) -> None:
    server.fine_tunes.hold()
    job_spec = uploaded(jobs)
    state = jobs.start(job_spec)
    polls = [jobs.describe(job_spec, state.job_id).status for _ in range(10)]
    assert polls == [TrainingStatus.QUEUED] + [TrainingStatus.RUNNING] * 9


def test_a_cancelled_job_reads_cancelled(jobs: OpenAICompatibleJobs) -> None:
    job_spec = uploaded(jobs)
    state = jobs.start(job_spec)
    assert jobs.stop(job_spec, state.job_id).status is TrainingStatus.CANCELLED
    assert jobs.describe(job_spec, state.job_id).provider_status == "cancelled"


def test_throttled_and_failing_reads_are_retried(
    jobs: OpenAICompatibleJobs, server: ExampleModelServer
) -> None:
    job_spec = uploaded(jobs)
    state = jobs.start(job_spec)
    server.fine_tunes.outage(429, route="GET /v1/fine-tunes/", retry_after=0)
    server.fine_tunes.outage(503, route="GET /v1/fine-tunes/")
    assert jobs.describe(job_spec, state.job_id).provider_status == "queued"


def test_a_create_that_failed_on_the_providers_side_is_not_sent_twice(
    jobs: OpenAICompatibleJobs, server: ExampleModelServer
) -> None:
    job_spec = uploaded(jobs)
    server.fine_tunes.outage(500, route="POST /v1/fine-tunes")
    with pytest.raises(ProviderFault) as fault:
        jobs.start(job_spec)
    assert fault.value.retryable is True
    assert str(fault.value).startswith(
        f"{server.base_url} answered HTTP 500 when starting {job_spec.job_name}"
    )
    assert server.fine_tunes.bodies == []


def test_a_throttled_create_is_sent_again(jobs: OpenAICompatibleJobs, server: ExampleModelServer) -> None:
    job_spec = uploaded(jobs)
    server.fine_tunes.outage(429, route="POST /v1/fine-tunes", retry_after=0)
    assert jobs.start(job_spec).provider_status == "pending"
    assert len(server.fine_tunes.bodies) == 1


def test_the_key_is_read_for_every_request_and_a_wrong_one_is_refused_without_echoing_it(
    server: ExampleModelServer,
) -> None:
    reads: list[str] = []

    def key() -> str:
        reads.append("read")
        return KEY if len(reads) == 1 else "sk-revoked-key"

    jobs = OpenAICompatibleJobs(server.base_url, api_key=key, backoff=NO_WAIT, sleep=lambda _: None)
    assert jobs.upload("train.jsonl", b"{}\n") is not None
    with pytest.raises(ProviderFault) as refused:
        jobs.describe(spec(), "ft-000001")
    assert refused.value.retryable is False
    assert "answered HTTP 401" in str(refused.value)
    assert "sk-revoked-key" not in str(refused.value)
    assert len(reads) == 2


def test_a_provider_that_never_answers_is_a_retryable_timeout_after_every_attempt() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        base_url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        waits: list[float] = []
        jobs = OpenAICompatibleJobs(
            base_url, api_key=lambda: None, backoff=NO_WAIT, sleep=waits.append, timeout_s=0.2
        )
        with pytest.raises(ProviderFault) as fault:
            jobs.describe(spec(), "ft-000001")
    assert fault.value.retryable is True
    assert str(fault.value).startswith(f"could not reach {base_url} when reading ft-000001:")
    assert len(waits) == NO_WAIT.attempts - 1


def test_a_throttled_upload_is_sent_again_and_stored_once(
    jobs: OpenAICompatibleJobs, server: ExampleModelServer
) -> None:
    server.fine_tunes.outage(429, route="POST /v1/files", retry_after=0)
    assert jobs.upload("train.jsonl", b"{}\n") in server.fine_tunes.files
    assert len(server.fine_tunes.files) == 1
