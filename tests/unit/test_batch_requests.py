"""The batch inference requests, checked against botocore's service models (Bedrock) or the documented
schema (OpenAI's Batch API); how their output records are read; and how a run is cut into jobs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import jsonschema
import pytest
from botocore.exceptions import ParamValidationError
from botocore.stub import Stubber
from botocore.validate import validate_parameters
from hypothesis import given
from hypothesis import strategies as st

from benchgen.aws.providers import bedrock as bedrock_adapter
from benchgen.providers import bedrock_batch, openai_batch
from benchgen.providers.batch import BatchJobSpec, BatchLimits, BatchRefused, BatchStatus, JobCutter, job_size
from benchgen.records.runs import LiveModel
from benchgen.steps.inference import LiveRunError, inference_mode
from benchgen.vocabulary import InferenceMode, Sampling
from tests.unit.test_inference_requests import CHAT_REQUEST_SCHEMA

SAMPLING = Sampling(temperature=0.0, max_tokens=256, top_p=0.9, stop=["####"])
ROLE = "arn:aws:iam::123456789012:role/benchgen-BedrockBatchRole"
JOB_ARN = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abcdef123456"
SPEC = BatchJobSpec(
    name="benchgen-0123456789abcdef-000",
    model_id="amazon.nova-micro-v1:0",
    records=150,
    input_key="runs/run-1/batch/benchgen-0123456789abcdef-000/records.jsonl",
    input_uri="s3://data-bucket/runs/run-1/batch/benchgen-0123456789abcdef-000/records.jsonl",
    output_uri="s3://data-bucket/batch-output/run-1/benchgen-0123456789abcdef-000/",
    role_arn=ROLE,
)

# OpenAI's batch input line and create body (the Batch API reference), as this project sends them.
BATCH_LINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["custom_id", "method", "url", "body"],
    "additionalProperties": False,
    "properties": {
        "custom_id": {"type": "string", "minLength": 1},
        "method": {"const": "POST"},
        "url": {"enum": ["/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/responses"]},
        "body": CHAT_REQUEST_SCHEMA,
    },
}
CREATE_BATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["input_file_id", "endpoint", "completion_window"],
    "additionalProperties": False,
    "properties": {
        "input_file_id": {"type": "string"},
        "endpoint": {"enum": ["/v1/chat/completions", "/v1/embeddings", "/v1/completions", "/v1/responses"]},
        "completion_window": {"const": "24h"},
        "metadata": {
            "type": "object",
            "maxProperties": 16,
            "additionalProperties": {"type": "string", "maxLength": 512},
            "propertyNames": {"maxLength": 64},
        },
    },
}


def _converse_input_shape() -> Any:
    return (
        botocore.session.get_session()
        .get_service_model("bedrock-runtime")
        .operation_model("Converse")
        .input_shape
    )


def test_create_model_invocation_job_matches_the_service_model_and_its_answer_is_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    client = boto3.client(
        "bedrock", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    monkeypatch.setattr(bedrock_adapter, "regional", lambda service, region: client)
    jobs = bedrock_adapter.BedrockBatchJobs("us-east-1")
    with Stubber(client) as stub:
        stub.add_response(
            "create_model_invocation_job",
            {"jobArn": JOB_ARN},
            expected_params={
                "jobName": SPEC.name,
                "roleArn": ROLE,
                "clientRequestToken": SPEC.name,
                "modelId": "amazon.nova-micro-v1:0",
                "inputDataConfig": {"s3InputDataConfig": {"s3InputFormat": "JSONL", "s3Uri": SPEC.input_uri}},
                "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": SPEC.output_uri}},
                "timeoutDurationInHours": 24,
                "modelInvocationType": "Converse",
            },
        )
        stub.add_response(
            "get_model_invocation_job",
            {
                "jobArn": JOB_ARN,
                "modelId": "amazon.nova-micro-v1:0",
                "roleArn": ROLE,
                "status": "PartiallyCompleted",
                "message": "2 records failed",
                "submitTime": datetime(2026, 1, 1, tzinfo=UTC),
                "inputDataConfig": {"s3InputDataConfig": {"s3Uri": SPEC.input_uri}},
                "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": SPEC.output_uri}},
                "successRecordCount": 148,
                "errorRecordCount": 2,
            },
            expected_params={"jobIdentifier": JOB_ARN},
        )

        job_id = jobs.submit(SPEC, tmp_path / "unused.jsonl")
        state = jobs.describe(SPEC, job_id)

    assert job_id == JOB_ARN
    assert (state.provider_status, state.status, state.succeeded, state.failed, state.message) == (
        "PartiallyCompleted",
        BatchStatus.ENDED,
        148,
        2,
        "2 records failed",
    )
    assert bedrock_batch.BATCH.output_folder(job_id) == "abcdef123456"


def test_a_bedrock_records_model_input_is_a_converse_request_by_the_service_model() -> None:
    record = bedrock_batch.BATCH.record(7, "amazon.nova-micro-v1:0", "What is 6 x 7?", SAMPLING)

    assert set(record) == {"recordId", "modelInput"}
    assert record["recordId"] == "R0000000007" and len(record["recordId"]) == 11
    validate_parameters(
        {"modelId": "amazon.nova-micro-v1:0", **record["modelInput"]}, _converse_input_shape()
    )
    misnamed = {**record["modelInput"], "inferenceConfig": {"max_tokens": 256}}
    with pytest.raises(ParamValidationError, match="max_tokens"):
        validate_parameters({"modelId": "m", **misnamed}, _converse_input_shape())


@pytest.mark.parametrize(
    ("status", "ours"),
    [
        ("Submitted", BatchStatus.RUNNING),
        ("Validating", BatchStatus.RUNNING),
        ("Scheduled", BatchStatus.RUNNING),
        ("InProgress", BatchStatus.RUNNING),
        ("Stopping", BatchStatus.RUNNING),
        ("Completed", BatchStatus.ENDED),
        ("PartiallyCompleted", BatchStatus.ENDED),
        ("Failed", BatchStatus.FAILED),
        ("Stopped", BatchStatus.FAILED),
        ("Expired", BatchStatus.FAILED),
    ],
)
def test_every_documented_bedrock_job_status_is_read(status: str, ours: BatchStatus) -> None:
    assert bedrock_batch.BATCH.status(status) is ours


def test_every_bedrock_status_is_one_the_service_model_names() -> None:
    model = botocore.session.get_session().get_service_model("bedrock")
    documented = model.operation_model("GetModelInvocationJob").output_shape.members["status"].enum
    assert {status.lower() for status in documented} == set(bedrock_batch.BATCH.statuses)


def test_a_bedrock_output_record_is_an_answer_with_its_tokens_or_an_unanswered_case_with_the_reason() -> None:
    answered = {
        "recordId": "R0000000003",
        "modelInput": {},
        "modelOutput": {
            "output": {"message": {"role": "assistant", "content": [{"text": "42"}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
        },
    }
    failed = {"recordId": "R0000000004", "modelInput": {}, "error": {"errorCode": 400, "errorMessage": "bad"}}

    (first,) = bedrock_batch.BATCH.results(answered)
    (second,) = bedrock_batch.BATCH.results(failed)

    assert first.index == 3 and first.answer is not None
    assert (first.answer.text, first.answer.input_tokens, first.answer.output_tokens) == ("42", 12, 3)
    assert (second.index, second.answer, second.error) == (
        4,
        None,
        "Bedrock batch inference: bad (error code 400)",
    )
    assert list(bedrock_batch.BATCH.results({"recordId": "someone-else", "modelOutput": {}})) == []


def test_an_openai_batch_line_and_create_body_follow_the_batch_api_reference() -> None:
    line = openai_batch.BATCH.record(12, "example-base", "What is 6 x 7?", SAMPLING)

    jsonschema.validate(line, BATCH_LINE_SCHEMA)
    jsonschema.validate(openai_batch.create_batch_request("file-abc", "benchgen-x-000"), CREATE_BATCH_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**line, "priority": 1}, BATCH_LINE_SCHEMA)


def test_an_openai_batch_output_line_and_error_line_are_read() -> None:
    answered = {
        "id": "batch_req_1",
        "custom_id": "R0000000001",
        "response": {
            "status_code": 200,
            "body": {
                "choices": [{"message": {"role": "assistant", "content": "42"}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 2},
            },
        },
        "error": None,
    }
    refused = {
        "id": "batch_req_2",
        "custom_id": "R0000000002",
        "response": {"status_code": 429, "body": {"error": {"message": "rate limited"}}},
        "error": None,
    }
    expired = {
        "id": "batch_req_3",
        "custom_id": "R0000000003",
        "response": None,
        "error": {
            "code": "batch_expired",
            "message": "This request could not be executed before the completion window expired.",
        },
    }

    (first,) = openai_batch.BATCH.results(answered)
    (second,) = openai_batch.BATCH.results(refused)
    (third,) = openai_batch.BATCH.results(expired)

    assert first.answer is not None and (first.answer.text, first.answer.output_tokens) == ("42", 2)
    assert second.error == "the Batch API: HTTP 429: rate limited"
    assert third.error == (
        "the Batch API: This request could not be executed before the completion window expired. "
        "(batch_expired)"
    )


def test_an_openai_batch_answer_gives_its_status_counts_and_files() -> None:
    provider_status, status, details = openai_batch.batch_state(
        {
            "status": "failed",
            "request_counts": {"total": 3, "completed": 0, "failed": 0},
            "errors": {"data": [{"code": "invalid_request", "message": "bad line", "line": 2}]},
        },
        3,
    )

    assert (provider_status, status) == ("failed", BatchStatus.FAILED)
    assert details["message"] == "bad line (line 2, invalid_request)"


LIMITS = BatchLimits(min_records=100, max_records=50_000, max_bytes=1_000_000_000)


def test_a_run_under_the_minimum_is_refused_and_one_above_the_maximum_is_spread_evenly() -> None:
    with pytest.raises(BatchRefused, match="99 cases is fewer than the 100 records"):
        job_size(99, LIMITS)

    assert job_size(100_001, LIMITS) == 33_334  # three jobs, none left with a handful


def _cut(cases: int, limits: BatchLimits, record_bytes: int) -> list[tuple[int, int]]:
    cutter = JobCutter(job_size(cases, limits), limits)
    for index in range(cases):
        cutter.starts_job(index, record_bytes)
    cutter.check()
    return cutter.jobs


@given(
    cases=st.integers(min_value=5, max_value=5000),
    max_records=st.integers(min_value=5, max_value=700),
    record_bytes=st.integers(min_value=1, max_value=50),
)
def test_jobs_cover_every_record_once_in_order_and_each_is_within_the_limits(
    cases: int, max_records: int, record_bytes: int
) -> None:
    limits = BatchLimits(min_records=5, max_records=max_records, max_bytes=10_000)
    try:
        jobs = _cut(cases, limits, record_bytes)
    except BatchRefused:
        return  # only when records too large for whole jobs would leave one under the minimum
    assert [first for first, _ in jobs] == [sum(size for _, size in jobs[:n]) for n in range(len(jobs))]
    assert sum(size for _, size in jobs) == cases
    assert all(limits.min_records <= size <= limits.max_records for _, size in jobs)
    assert all(size * record_bytes <= limits.max_bytes for _, size in jobs)


def test_records_too_large_for_one_job_are_refused_with_the_sizes() -> None:
    limits = BatchLimits(min_records=1, max_records=10, max_bytes=100)
    cutter = JobCutter(10, limits)

    with pytest.raises(BatchRefused, match="case 1 is 101 bytes as a record, more than the 100 bytes"):
        cutter.starts_job(0, 101)

    assert json.dumps(_cut(10, limits, 30)) == "[[0, 3], [3, 3], [6, 3], [9, 1]]"


def _live(provider: str, mode: InferenceMode, above: int = 1000) -> LiveModel:
    return LiveModel(
        connection_id="c", provider=provider, model_id="m", inference_mode=mode, batch_above_cases=above
    )


@pytest.mark.parametrize(
    ("provider", "mode", "cases", "chosen"),
    [
        ("bedrock", InferenceMode.AUTO, 1000, InferenceMode.ON_DEMAND),  # not above the run's size
        ("bedrock", InferenceMode.AUTO, 1001, InferenceMode.BATCH),
        ("openai-compatible", InferenceMode.AUTO, 1001, InferenceMode.BATCH),
        ("sagemaker", InferenceMode.AUTO, 100_000, InferenceMode.ON_DEMAND),  # no batch API
        ("bedrock", InferenceMode.ON_DEMAND, 1_000_000, InferenceMode.ON_DEMAND),
        ("bedrock", InferenceMode.BATCH, 100, InferenceMode.BATCH),
    ],
)
def test_the_plan_chooses_how_a_run_asks_its_model(
    provider: str, mode: InferenceMode, cases: int, chosen: InferenceMode
) -> None:
    assert inference_mode(_live(provider, mode), cases) is chosen


def test_auto_asks_on_demand_a_run_below_the_providers_minimum_even_above_its_size() -> None:
    assert inference_mode(_live("bedrock", InferenceMode.AUTO, above=10), 50) is InferenceMode.ON_DEMAND


def test_an_explicit_batch_run_on_a_kind_without_batch_inference_fails_with_what_would_serve() -> None:
    with pytest.raises(LiveRunError, match="a SageMaker endpoint has no batch inference API for live runs"):
        inference_mode(_live("sagemaker", InferenceMode.BATCH), 100_000)
