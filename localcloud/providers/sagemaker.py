"""The sagemaker kind's local fake: moto's training jobs, run by the provider clock.

moto 5.2.5 creates a training job ``Completed``, which is kinder than AWS. While installed:

- a job is read through the clock (``InProgress`` until it ends ``Completed`` with its ``ModelArtifacts``,
  or ``Failed``);
- a second training job of the same name is refused (``ResourceInUse``, as AWS does; moto replaces the
  first), and ``StopTrainingJob``, which moto lacks, answers (``Stopping``, then ``Stopped``);
- a training job without ``AlgorithmSpecification`` is accepted: AWS does for serverless customization
  (``ServerlessJobConfig``, which chooses the trainer itself), and moto 5.2.5 fails on it with a TypeError.
"""

from __future__ import annotations

from typing import Any

from localcloud.iam.actions import Params, Request, Requests, Where, passes_role
from localcloud.patches import Patch
from localcloud.provider_clock import ProviderClock

# SageMaker's default limit for serverless customization jobs, which AWS reports as the job's
# StoppingCondition when the request gave none.
SERVERLESS_MAX_RUNTIME_S = 86_400


def patches(clock: ProviderClock) -> list[Patch]:
    from moto.core.responses import EmptyResult
    from moto.sagemaker import models as sagemaker
    from moto.sagemaker import responses as sagemaker_responses
    from moto.sagemaker.exceptions import ResourceInUseException, ValidationError

    create_training = sagemaker.SageMakerModelBackend.create_training_job
    describe_training = sagemaker.SageMakerModelBackend.describe_training_job
    training_init = sagemaker.FakeTrainingJob.__init__
    artifacts: dict[str, Any] = {}  # each job's artifacts, shown once it completes

    def create_training_job(backend: Any, training_job_name: str, **kwargs: Any) -> Any:
        if training_job_name in backend.training_jobs:
            raise ResourceInUseException(
                f"Training job names must be unique within an AWS account and region, and a training job "
                f"with this name already exists ({training_job_name})"
            )
        return create_training(backend, training_job_name=training_job_name, **kwargs)

    def describe_training_job(backend: Any, training_job_name: str) -> Any:
        job = backend.training_jobs.get(training_job_name)
        if job is not None:
            _advance(clock, job, artifacts)
        return describe_training(backend, training_job_name)

    def fake_training_job_init(job: Any, *args: Any, **kwargs: Any) -> None:
        serverless = kwargs.get("algorithm_specification") is None
        if serverless:
            kwargs["algorithm_specification"] = {}
        training_init(job, *args, **kwargs)
        if serverless:
            job.algorithm_specification = None
        if job.stopping_condition is None:
            job.stopping_condition = {"MaxRuntimeInSeconds": SERVERLESS_MAX_RUNTIME_S}
        job.training_job_status, job.secondary_status = "InProgress", "Starting"
        job.training_end_time = None
        job.final_metric_data_list = None
        artifacts[job.training_job_name] = job.model_artifacts
        job.model_artifacts = {"S3ModelArtifacts": ""}

    def stop_training_job(response: Any) -> Any:
        name = response._get_param("TrainingJobName")
        backend = response.sagemaker_backend
        job = backend.training_jobs.get(name)
        if job is None:
            backend.describe_training_job(name)  # raises AWS's "Could not find training job"
        elif job.training_job_status != "InProgress":
            raise ValidationError(
                f"The training job {name} is not in progress (it is {job.training_job_status})"
            )
        else:
            job.training_job_status, job.secondary_status = "Stopping", "Stopping"
        return EmptyResult()

    return [
        Patch(sagemaker.SageMakerModelBackend, "create_training_job", create_training_job),
        Patch(sagemaker.SageMakerModelBackend, "describe_training_job", describe_training_job),
        Patch(sagemaker.FakeTrainingJob, "__init__", fake_training_job_init),
        Patch(sagemaker_responses.SageMakerResponse, "stop_training_job", stop_training_job),
    ]


def _advance(clock: ProviderClock, job: Any, artifacts: dict[str, Any]) -> None:
    if job.training_job_status == "Stopping":
        job.training_job_status, job.secondary_status = "Stopped", "Stopped"
        return
    if job.training_job_status != "InProgress":
        return
    ending = clock.tick(job.training_job_name)
    if ending is None:
        job.secondary_status = "Training"
    elif ending == "Failed":
        job.training_job_status, job.secondary_status = "Failed", "Failed"
        job.failure_reason = clock.failure(job.training_job_name)
    else:
        job.training_job_status, job.secondary_status = "Completed", "Completed"
        job.model_artifacts = artifacts.get(job.training_job_name, job.model_artifacts)
    if ending is not None:
        from moto.core.utils import utcnow

        job.training_end_time = job.last_modified_time = utcnow()


def _sagemaker(action: str, kind: str, name: str) -> Requests:
    """SageMaker's resource names are case-insensitive and lower case in ARNs."""

    def requests(params: Params, where: Where) -> list[Request]:
        arn = f"arn:aws:sagemaker:{where.region}:{where.account}:{kind}/{str(params[name]).lower()}"
        return [Request(action, arn)]

    return requests


def _create_training_job(params: Params, where: Where) -> list[Request]:
    return [
        *_sagemaker("sagemaker:CreateTrainingJob", "training-job", "TrainingJobName")(params, where),
        passes_role(str(params["RoleArn"]), "sagemaker"),
    ]


# What IAM authorizes for the calls this kind makes: its endpoints (live runs) and its training jobs.
IAM_OPERATIONS: dict[str, dict[str, Requests]] = {
    "sagemaker": {
        "CreateTrainingJob": _create_training_job,
        "DescribeTrainingJob": _sagemaker("sagemaker:DescribeTrainingJob", "training-job", "TrainingJobName"),
        "StopTrainingJob": _sagemaker("sagemaker:StopTrainingJob", "training-job", "TrainingJobName"),
    },
    "sagemaker-runtime": {
        "InvokeEndpoint": _sagemaker("sagemaker:InvokeEndpoint", "endpoint", "EndpointName"),
    },
}
