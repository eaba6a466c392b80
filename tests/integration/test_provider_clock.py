"""The local cloud's provider clock: moto's training jobs run for a few reads and then end, fail when told
to, or never end; never kinder than AWS. Seen through the job adapters, as the training pipeline sees them."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.aws.training_jobs import BedrockJobs, SageMakerJobs
from benchgen.providers.jobs import JobSpec, job_name_for
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method
from infra.local.cloud import LocalCloud
from infra.local.provider_clock import ProviderClock

ROLE = "arn:aws:iam::123456789012:role/benchgen-training"
RUN_ID = "train-0f0f0f0f0f0f0f0f0f0f0f0f"
JOB = job_name_for(RUN_ID)


def spec(**changes: Any) -> JobSpec:
    fields: dict[str, Any] = {
        "training_run_id": RUN_ID,
        "job_name": JOB,
        "method": Method.DEMONSTRATION,
        "base_model": "amazon.nova-micro-v1:0:128k",
        "hyperparameters": {"epochCount": "2"},
        "train_uri": f"s3://data-bucket/training/{RUN_ID}/train.jsonl",
        "validation_uri": f"s3://data-bucket/training/{RUN_ID}/validation.jsonl",
        "output_uri": f"s3://data-bucket/training/{RUN_ID}/output/",
        "role_arn": ROLE,
    }
    return JobSpec(**(fields | changes))


def sagemaker_spec() -> JobSpec:
    return spec(
        base_model="meta-textgeneration-llama-3-1-8b-instruct", hyperparameters={}, method=Method.PREFERENCE
    )


def test_a_bedrock_job_completes_after_the_configured_reads_and_only_then_names_its_model(
    fresh_api_cloud: LocalCloud,
) -> None:
    fresh_api_cloud.provider_clock.polls_to_complete = 3
    jobs = BedrockJobs(fresh_api_cloud.region)
    started = jobs.start(spec())  # the start reads the job once
    polls = [jobs.describe(spec(), started.job_id) for _ in range(2)]
    assert [started.status, *(poll.status for poll in polls)] == [
        TrainingStatus.RUNNING,
        TrainingStatus.RUNNING,
        TrainingStatus.SUCCEEDED,
    ]
    assert polls[-1].result_model == (f"arn:aws:bedrock:us-east-1:123456789012:custom-model/{JOB}-{JOB}")
    raw = fresh_api_cloud.client("bedrock").get_model_customization_job(jobIdentifier=JOB)
    assert "failureMessage" not in raw


def test_a_running_bedrock_job_shows_no_output_model_and_no_failure(fresh_api_cloud: LocalCloud) -> None:
    fresh_api_cloud.provider_clock.hold(JOB)
    BedrockJobs(fresh_api_cloud.region).start(spec())
    raw = fresh_api_cloud.client("bedrock").get_model_customization_job(jobIdentifier=JOB)
    assert raw["status"] == "InProgress"
    assert {"outputModelArn", "failureMessage", "endTime"}.isdisjoint(raw)


def test_a_bedrock_job_told_to_fail_ends_failed_with_the_message(fresh_api_cloud: LocalCloud) -> None:
    fresh_api_cloud.provider_clock.fail(JOB, "Training data contains reserved string 'Assistant:'")
    jobs = BedrockJobs(fresh_api_cloud.region)
    jobs.start(spec())
    ended = jobs.describe(spec(), None)
    assert (ended.provider_status, ended.status) == ("Failed", TrainingStatus.FAILED)
    assert ended.failure_reason == "Training data contains reserved string 'Assistant:'"
    assert ended.result_model is None


def test_a_held_job_never_ends(fresh_api_cloud: LocalCloud) -> None:
    fresh_api_cloud.provider_clock.hold(JOB)
    jobs = BedrockJobs(fresh_api_cloud.region)
    jobs.start(spec())
    assert {jobs.describe(spec(), None).status for _ in range(20)} == {TrainingStatus.RUNNING}
    assert fresh_api_cloud.provider_clock.reads(JOB) == 21


def test_a_serverless_sagemaker_job_is_accepted_runs_and_completes_with_its_artifacts(
    fresh_api_cloud: LocalCloud,
) -> None:
    jobs = SageMakerJobs(fresh_api_cloud.region)
    started = jobs.start(sagemaker_spec())
    assert (started.provider_status, started.status, started.result_model) == (
        "InProgress",
        TrainingStatus.RUNNING,
        None,
    )
    ended = jobs.describe(sagemaker_spec(), started.job_id)
    assert (ended.provider_status, ended.status) == ("Completed", TrainingStatus.SUCCEEDED)
    assert ended.result_model == f"s3://data-bucket/training/{RUN_ID}/output/{JOB}/output/model.tar.gz"
    raw = fresh_api_cloud.client("sagemaker").describe_training_job(TrainingJobName=JOB)
    assert "AlgorithmSpecification" not in raw
    assert raw["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}


def test_a_second_sagemaker_start_of_the_same_name_returns_the_first_job(fresh_api_cloud: LocalCloud) -> None:
    fresh_api_cloud.provider_clock.hold(JOB)
    jobs = SageMakerJobs(fresh_api_cloud.region)
    first = jobs.start(sagemaker_spec())
    second = jobs.start(sagemaker_spec())
    assert second.job_id == first.job_id
    listed = fresh_api_cloud.client("sagemaker").list_training_jobs()["TrainingJobSummaries"]
    assert [job["TrainingJobName"] for job in listed] == [JOB]
    with pytest.raises(Exception, match="ResourceInUse"):
        fresh_api_cloud.client("sagemaker").create_training_job(
            TrainingJobName=JOB, RoleArn=ROLE, OutputDataConfig={"S3OutputPath": "s3://data-bucket/x/"}
        )


def test_a_stopped_sagemaker_job_is_stopping_then_cancelled(fresh_api_cloud: LocalCloud) -> None:
    fresh_api_cloud.provider_clock.hold(JOB)
    jobs = SageMakerJobs(fresh_api_cloud.region)
    jobs.start(sagemaker_spec())
    stopping = jobs.stop(sagemaker_spec(), None)
    assert stopping.provider_status == "Stopped"
    assert stopping.status is TrainingStatus.CANCELLED


def test_a_sagemaker_job_told_to_fail_reports_the_reason(fresh_api_cloud: LocalCloud) -> None:
    fresh_api_cloud.provider_clock.fail(JOB, "ClientError: the DPO rows' chosen and rejected turns differ")
    jobs = SageMakerJobs(fresh_api_cloud.region)
    jobs.start(sagemaker_spec())
    ended = jobs.describe(sagemaker_spec(), None)
    assert (ended.status, ended.failure_reason) == (
        TrainingStatus.FAILED,
        "ClientError: the DPO rows' chosen and rejected turns differ",
    )
    # SageMaker refuses to stop a job that has ended; the adapter answers the end instead
    assert jobs.stop(sagemaker_spec(), None).status is TrainingStatus.FAILED


def test_moto_is_itself_again_once_the_clock_is_uninstalled() -> None:
    from moto.bedrock.models import BedrockBackend
    from moto.sagemaker.models import FakeTrainingJob
    from moto.sagemaker.responses import SageMakerResponse

    before = (BedrockBackend.get_model_customization_job, FakeTrainingJob.__init__)
    with ProviderClock():
        assert FakeTrainingJob.__init__ is not before[1]
        assert hasattr(SageMakerResponse, "stop_training_job")
    assert (BedrockBackend.get_model_customization_job, FakeTrainingJob.__init__) == before
    assert not hasattr(SageMakerResponse, "stop_training_job")
