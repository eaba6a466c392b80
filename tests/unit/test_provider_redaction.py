"""A provider's words lose the connection's key and anything shaped like a credential, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.aws.providers.redaction import redact, redacted_batches, redacted_jobs, redacted_model
from benchgen.inference.model import Answer, ModelCallError
from benchgen.providers.batch import BatchJobSpec, BatchState, BatchStatus
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method

KEY = "k3y/with+odd chars&1"


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        (f"invalid API key: {KEY}", "invalid API key: [redacted]"),
        ('{"key": "k3y/with+odd chars&1"}', '{"key": "[redacted]"}'),
        ("sent k3y%2Fwith%2Bodd%20chars%261 twice", "sent [redacted] twice"),
    ],
)
def test_the_connections_own_key_is_taken_out_as_sent_escaped_or_encoded(said: str, shown: str) -> None:
    assert redact(said, [KEY]) == shown


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        ("invalid API key: Bearer abc.def-123456", "invalid API key: Bearer [redacted]"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [redacted]"),
        ('{"x-api-key": "abcd1234"}', '{"x-api-key": "[redacted]"}'),
        ("GET /v1?api_key=hunter2&limit=1", "GET /v1?api_key=[redacted]&limit=1"),
        ("password: p@ss", "password: [redacted]"),
        ("key sk-proj-AbCdEf0123456789 is revoked", "key [redacted] is revoked"),
        ("signed with AKIAIOSFODNN7EXAMPLE/20260101", "signed with [redacted]/20260101"),
        ("token ghp_" + "a" * 36 + " expired", "token [redacted] expired"),
        ("hf_" + "B" * 34, "[redacted]"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIz", "jwt [redacted]"),
    ],
)
def test_anything_shaped_like_a_credential_is_taken_out_whoevers_it_is(said: str, shown: str) -> None:
    assert redact(said) == shown


@pytest.mark.parametrize(
    "said",
    [
        "the token provided is invalid",
        "Unexpected token < in JSON at position 0",
        "max_tokens: 256 exceeds the model's context (tokens: 8192)",
        "Basic authentication is not supported",
        "job ft-0123456789abcdef failed: desk-lamp-12345678 not found",
    ],
)
def test_ordinary_words_are_left_as_the_provider_said_them(said: str) -> None:
    assert redact(said, ["sk-unrelated-secret"]) == said


class _Quoting:
    """A model and a provider's jobs that quote the key back in everything they say."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def complete(self, prompt: str) -> Answer:
        if self.fail:
            raise ModelCallError(f"429: Bearer {KEY}", retryable=True, retry_after=2.0, throttled=True)
        return Answer(text=f"my key is {KEY}", raw=f'{{"echo": "{KEY}"}}', input_tokens=7, output_tokens=3)

    def upload(self, name: str, data: bytes) -> str | None:
        raise ProviderFault(f"upload refused for {KEY}", retryable=False)

    def start(self, spec: JobSpec) -> JobState:
        return JobState(
            provider_status=f"error {KEY}",
            status=TrainingStatus.FAILED,
            job_id="ft-1",
            failure_reason=f"api_key={KEY}",
            message=None,
        )

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        raise ProviderFault(f"throttled {KEY}", retryable=True, retry_after=3.0)

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        return self.start(spec)


SPEC = JobSpec(
    training_run_id="train-1",
    job_name="benchgen-train-1",
    method=Method.DEMONSTRATION,
    base_model="m",
    train_uri="file-1",
    output_uri="s3://b/o/",
)


def test_a_models_failure_and_answer_come_out_redacted_and_keep_everything_else() -> None:
    with pytest.raises(ModelCallError) as failed:
        redacted_model(_Quoting(fail=True), lambda: (KEY,)).complete("q")
    assert str(failed.value) == "429: Bearer [redacted]"
    # whether to retry, how long to wait, and that it was throttling (which uses none of a case's attempts)
    assert (failed.value.retryable, failed.value.retry_after, failed.value.throttled) == (True, 2.0, True)

    answer = redacted_model(_Quoting(fail=False), lambda: (KEY,)).complete("q")
    assert answer == Answer(
        text="my key is [redacted]", raw='{"echo": "[redacted]"}', input_tokens=7, output_tokens=3
    )


def test_training_jobs_faults_and_states_come_out_redacted() -> None:
    jobs = redacted_jobs(_Quoting(fail=True), lambda: (KEY,))
    with pytest.raises(ProviderFault) as refused:
        jobs.upload("train.jsonl", b"")
    assert (str(refused.value), refused.value.retryable) == ("upload refused for [redacted]", False)
    with pytest.raises(ProviderFault) as throttled:
        jobs.describe(SPEC, None)
    assert (throttled.value.retryable, throttled.value.retry_after) == (True, 3.0)
    assert str(throttled.value) == "throttled [redacted]"

    state = jobs.start(SPEC)
    assert (state.provider_status, state.failure_reason, state.message) == (
        "error [redacted]",
        "api_key=[redacted]",
        None,
    )
    assert (state.status, state.job_id) == (TrainingStatus.FAILED, "ft-1")


class _QuotingBatches:
    """A provider's batch jobs that quote the key back in their faults, states and output files."""

    def submit(self, spec: BatchJobSpec, records: Path) -> str:
        raise ProviderFault(f"refused Bearer {KEY}", retryable=False)

    def describe(self, spec: BatchJobSpec, job_id: str) -> BatchState:
        return BatchState(provider_status="failed", status=BatchStatus.FAILED, message=f"bad key {KEY}")

    def download(self, file_id: str, path: Path) -> Path:
        path.write_text(f'{{"custom_id": "R0000000001", "error": {{"message": "invalid key {KEY}"}}}}\n')
        return path


BATCH_SPEC = BatchJobSpec(
    name="benchgen-x-000",
    model_id="m",
    records=1,
    input_key="k",
    input_uri="s3://b/k",
    output_uri="s3://b/o/",
)


def test_batch_jobs_faults_states_and_output_files_come_out_redacted(tmp_path: Path) -> None:
    jobs = redacted_batches(_QuotingBatches(), lambda: (KEY,))
    with pytest.raises(ProviderFault) as refused:
        jobs.submit(BATCH_SPEC, tmp_path / "records.jsonl")
    assert str(refused.value) == "refused Bearer [redacted]"
    assert jobs.describe(BATCH_SPEC, "batch_1").message == "bad key [redacted]"

    saved = jobs.download("file-errors", tmp_path / "errors.jsonl")

    assert (
        saved.read_text() == '{"custom_id": "R0000000001", "error": {"message": "invalid key [redacted]"}}\n'
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["errors.jsonl"]
