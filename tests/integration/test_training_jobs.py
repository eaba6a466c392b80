"""The AWS job adapters against moto: the calls are made, found by name, and moto's gaps are clear faults."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from benchgen.aws.clients import reset_clients
from benchgen.aws.providers import registry
from benchgen.aws.providers.bedrock import BedrockJobs
from benchgen.aws.providers.registry import jobs_for
from benchgen.aws.providers.sagemaker import SageMakerJobs
from benchgen.providers.checks import narrow
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, ProviderFault, job_name_for
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method, ProviderKind
from localcloud.model_server import ExampleModelServer

BEDROCK = ProviderKind("bedrock")
SAGEMAKER = ProviderKind("sagemaker")
OPENAI_COMPATIBLE = ProviderKind("openai-compatible")

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/benchgen-training"
RUN_ID = "train-00112233445566778899aabb"


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    reset_clients()
    with mock_aws():
        yield
    reset_clients()


def spec(**changes: Any) -> JobSpec:
    fields: dict[str, Any] = {
        "training_run_id": RUN_ID,
        "job_name": job_name_for(RUN_ID),
        "method": Method.DEMONSTRATION,
        "base_model": "amazon.nova-micro-v1:0:128k",
        "hyperparameters": {"epochCount": "2"},
        "train_uri": f"s3://data-bucket/training/{RUN_ID}/train.jsonl",
        "validation_uri": None,
        "output_uri": f"s3://data-bucket/training/{RUN_ID}/output/",
        "role_arn": ROLE,
    }
    return JobSpec(**(fields | changes))


def test_a_bedrock_job_is_created_under_its_name_and_found_by_it(moto: None) -> None:
    state = BedrockJobs(REGION).start(spec())
    assert (state.provider_status, state.status) == ("InProgress", TrainingStatus.RUNNING)
    assert state.job_id is not None and state.job_id.startswith("arn:aws:bedrock:us-east-1:")
    # moto fills in an output model at creation; a running job has no result yet
    assert state.result_model is None
    assert state.failure_reason is None
    listed = boto3.client("bedrock").list_model_customization_jobs()["modelCustomizationJobSummaries"]
    assert [job["jobName"] for job in listed] == ["benchgen-train-00112233445566778899aabb"]


def test_starting_the_same_bedrock_job_twice_makes_one_job(moto: None) -> None:
    jobs = BedrockJobs(REGION)
    first = jobs.start(spec())
    second = jobs.start(spec())
    assert second.job_id == first.job_id
    listed = boto3.client("bedrock").list_model_customization_jobs()["modelCustomizationJobSummaries"]
    assert len(listed) == 1


def test_a_stopped_bedrock_job_reads_cancelled(moto: None) -> None:
    jobs = BedrockJobs(REGION)
    jobs.start(spec())
    state = jobs.stop(spec(), None)
    assert (state.provider_status, state.status) == ("Stopped", TrainingStatus.CANCELLED)


def test_describing_a_bedrock_job_that_does_not_exist_is_not_retried(moto: None) -> None:
    with pytest.raises(ProviderFault) as missing:
        BedrockJobs(REGION).describe(spec(), None)
    assert missing.value.retryable is False
    assert "answered ResourceNotFoundException" in str(missing.value)


def test_moto_lacks_sagemaker_stop_and_that_is_a_clear_fault_not_a_retry(moto: None) -> None:
    with pytest.raises(ProviderFault) as missing:
        SageMakerJobs(REGION).stop(spec(), None)
    assert missing.value.retryable is False
    assert str(missing.value).startswith(
        "SageMaker StopTrainingJob for benchgen-train-00112233445566778899aabb is not implemented by the "
        "endpoint this connection reaches"
    )


@pytest.mark.parametrize(
    ("provider", "adapter"),
    [(BEDROCK, BedrockJobs), (SAGEMAKER, SageMakerJobs)],
)
def test_each_aws_connection_gets_its_providers_jobs(provider: ProviderKind, adapter: type) -> None:
    connection = ConnectionRecord(
        connection_id="conn-1",
        owner="user-a",
        name="training",
        provider=provider,
        region=REGION,
        role_arn=ROLE,
        profile=narrow(provider, None),
    )
    assert isinstance(registry.adapter(provider).training_jobs(connection), adapter)


def test_an_openai_compatible_connection_reads_its_key_from_secrets_manager_at_each_call(moto: None) -> None:
    secrets = boto3.client("secretsmanager")
    secret_arn = secrets.create_secret(Name="together-key", SecretString="sk-first")["ARN"]
    with ExampleModelServer(api_key="sk-first") as server:
        connection = ConnectionRecord(
            connection_id="conn-2",
            owner="user-a",
            name="together",
            provider=OPENAI_COMPATIBLE,
            base_url=server.base_url,
            secret_arn=secret_arn,
            profile=narrow(OPENAI_COMPATIBLE, None),
        )
        jobs = jobs_for(connection)
        file_id = jobs.upload("train.jsonl", b'{"messages": []}\n')
        assert file_id in server.fine_tunes.files
        # The key is rotated: the same adapter reads the new value at its next call.
        secrets.put_secret_value(SecretId=secret_arn, SecretString="sk-rotated")
        with pytest.raises(ProviderFault) as refused:
            jobs.upload("validation.jsonl", b'{"messages": []}\n')
        assert "answered HTTP 401" in str(refused.value)
        assert "sk-" not in str(refused.value)
