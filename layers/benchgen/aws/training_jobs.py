"""Provider training jobs on AWS: Bedrock model customization and SageMaker serverless customization.

Both are keyed by the job's fixed name (``JobSpec.job_name``): Bedrock's ARNs do not contain it, and a
name lets a repeated start find the job the first start made. Each failed call becomes a
:class:`ProviderFault` naming the service and what it answered; throttling, the services' own faults and
network failures are retryable, a refused request is not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from benchgen.aws.clients import regional
from benchgen.aws.inference import RETRYABLE_CODES, api_key
from benchgen.inference.model import ModelCallError
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault, TrainingJobs, map_status, status_note
from benchgen.providers.openai_jobs import OpenAICompatibleJobs
from benchgen.providers.profiles import ProviderKind
from benchgen.records.connections import ConnectionRecord
from benchgen.records.training_runs import TRAINING_TERMINAL, TrainingStatus
from benchgen.vocabulary import Method

T = TypeVar("T")


def _fault(what: str, error: Exception) -> ProviderFault:
    """The fault for a failed call: retryable when the same call may succeed later."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = str(details.get("Code", ""))
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        retryable = code in RETRYABLE_CODES or status >= 500
        return ProviderFault(f"{what} answered {code}: {details.get('Message', '')}", retryable=retryable)
    if isinstance(error, BotoConnectionError | HTTPClientError):
        return ProviderFault(f"could not reach {what}: {error}", retryable=True)
    if isinstance(error, NotImplementedError):
        # An endpoint that stands in for AWS (an emulator) may lack an action AWS has: retrying cannot help.
        return ProviderFault(
            f"{what} is not implemented by the endpoint this connection reaches ({error}); AWS implements "
            "it, so only a stand-in for AWS answers this way, and retrying will not help",
            retryable=False,
        )
    # A request botocore refused to send (ParamValidationError), missing credentials...
    return ProviderFault(f"{what} could not be asked: {error}", retryable=False)


def _call(what: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except (ClientError, BotoCoreError, NotImplementedError) as error:
        raise _fault(what, error) from None


def _needs_role(spec: JobSpec, service: str) -> str:
    if not spec.role_arn:
        raise ProviderFault(
            f"{service} trains with the connection's IAM role, and this connection names none: record the "
            "connection again with role_arn",
            retryable=False,
        )
    return spec.role_arn


class BedrockJobs:
    """Bedrock model customization (fine-tuning) jobs in one region."""

    def __init__(self, region: str) -> None:
        self._region = region

    def _client(self) -> Any:
        return regional("bedrock", self._region)

    def upload(self, name: str, data: bytes) -> str | None:
        return None  # Bedrock reads the training files from S3, where the pipeline put them

    def start(self, spec: JobSpec) -> JobState:
        request = create_customization_request(spec, _needs_role(spec, "Bedrock model customization"))
        try:
            self._client().create_model_customization_job(**request)
        except (ClientError, BotoCoreError, NotImplementedError) as error:
            fault = _fault(f"Bedrock CreateModelCustomizationJob for {spec.job_name}", error)
            return _after_refusal(self.describe, spec, fault, ended=False)
        return self.describe(spec, None)

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        # By name: the job's ARN does not carry it, and a name always finds the one job.
        job = _call(
            f"Bedrock GetModelCustomizationJob for {spec.job_name}",
            lambda: self._client().get_model_customization_job(jobIdentifier=spec.job_name),
        )
        provider_status = str(job.get("status", ""))
        status = map_status(ProviderKind.BEDROCK, provider_status)
        return JobState(
            provider_status=provider_status,
            status=status,
            job_id=job.get("jobArn"),
            result_model=job.get("outputModelArn") if status is TrainingStatus.SUCCEEDED else None,
            failure_reason=job.get("failureMessage") if status is TrainingStatus.FAILED else None,
            message=status_note(ProviderKind.BEDROCK, provider_status),
        )

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        try:
            self._client().stop_model_customization_job(jobIdentifier=spec.job_name)
        except (ClientError, BotoCoreError, NotImplementedError) as error:
            fault = _fault(f"Bedrock StopModelCustomizationJob for {spec.job_name}", error)
            return _after_refusal(self.describe, spec, fault, ended=True)
        return self.describe(spec, job_id)


def create_customization_request(spec: JobSpec, role_arn: str) -> dict[str, Any]:
    """The CreateModelCustomizationJob parameters of ``spec`` (the custom model takes the job's name)."""
    request: dict[str, Any] = {
        "jobName": spec.job_name,
        "customModelName": spec.job_name,
        "roleArn": role_arn,
        "baseModelIdentifier": spec.base_model,
        "customizationType": "FINE_TUNING",
        "trainingDataConfig": {"s3Uri": spec.train_uri},
        "outputDataConfig": {"s3Uri": spec.output_uri},
        "hyperParameters": dict(spec.hyperparameters),
    }
    if spec.validation_uri:
        request["validationDataConfig"] = {"validators": [{"s3Uri": spec.validation_uri}]}
    return request


def _after_refusal(
    describe: Callable[[JobSpec, str | None], JobState], spec: JobSpec, fault: ProviderFault, *, ended: bool
) -> JobState:
    """After a refused start or stop: the job's state when the refusal only says the work is done (a job of
    this name exists already; with ``ended``, it has already ended, so there is nothing to stop); else
    ``fault``. Each service words "already exists" its own way, so the job itself is asked."""
    if fault.retryable:
        raise fault
    try:
        state = describe(spec, None)
    except ProviderFault:
        raise fault from None
    if ended and state.status not in TRAINING_TERMINAL:
        raise fault
    return state


# SageMaker: serverless customization (``ServerlessJobConfig`` on CreateTrainingJob) rather than script
# mode. botocore's model has it, and it is SageMaker's own SFT/DPO trainer on Public Hub models: no
# training image, instance type or training script to choose and keep working, and DPO rows in the
# ``sagemaker-dpo`` export profile's shape. Script mode would need all three from the user.
PUBLIC_HUB = "SageMakerPublicHub"
# The BaseModelArn pattern of botocore's model (ServerlessJobConfig).
HUB_MODEL_ARN = re.compile(
    r"(arn:[a-z0-9-\.]{1,63}:sagemaker:\w+(?:-\w+)+:(\d{12}|aws):hub-content\/)[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
    r"\/Model\/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}(\/\d{1,4}.\d{1,4}.\d{1,4})?"
)
_HUB_MODEL_ID = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")
_TECHNIQUES = {Method.DEMONSTRATION: "SFT", Method.PREFERENCE: "DPO"}


def hub_model_arn(base_model: str, region: str) -> str:
    """The Public Hub ARN of ``base_model``: given as that ARN, or as the hub's model id."""
    if HUB_MODEL_ARN.fullmatch(base_model):
        return base_model
    if _HUB_MODEL_ID.fullmatch(base_model):
        partition = (
            "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"
        )
        return f"arn:{partition}:sagemaker:{region}:aws:hub-content/{PUBLIC_HUB}/Model/{base_model}"
    raise ProviderFault(
        "SageMaker serverless customization trains SageMaker Public Hub models, and base model "
        f"{base_model!r} is neither a hub model id (letters, digits and dashes, e.g. "
        "meta-textgeneration-llama-3-1-8b-instruct) nor a hub-content ARN: give the base model one of "
        "those ways",
        retryable=False,
    )


class SageMakerJobs:
    """SageMaker serverless customization jobs (SFT or DPO with LoRA) in one region."""

    def __init__(self, region: str) -> None:
        self._region = region

    def _client(self) -> Any:
        return regional("sagemaker", self._region)

    def upload(self, name: str, data: bytes) -> str | None:
        return None  # SageMaker reads the training files from S3, where the pipeline put them

    def start(self, spec: JobSpec) -> JobState:
        request = create_training_request(spec, _needs_role(spec, "SageMaker training"), self._region)
        try:
            self._client().create_training_job(**request)
        except (ClientError, BotoCoreError, NotImplementedError) as error:
            fault = _fault(f"SageMaker CreateTrainingJob for {spec.job_name}", error)
            return _after_refusal(self.describe, spec, fault, ended=False)
        return self.describe(spec, None)

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        job = _call(
            f"SageMaker DescribeTrainingJob for {spec.job_name}",
            lambda: self._client().describe_training_job(TrainingJobName=spec.job_name),
        )
        provider_status = str(job.get("TrainingJobStatus", ""))
        status = map_status(ProviderKind.SAGEMAKER, provider_status)
        artifacts = job.get("ModelArtifacts") or {}
        result = artifacts.get("S3ModelArtifacts") or job.get("OutputModelPackageArn")
        cost: dict[str, float | str] = {
            name: float(job[name])
            for name in ("BillableTimeInSeconds", "TrainingTimeInSeconds", "BillableTokenCount")
            if isinstance(job.get(name), int | float)
        }
        return JobState(
            provider_status=provider_status,
            status=status,
            job_id=job.get("TrainingJobArn"),
            result_model=result if status is TrainingStatus.SUCCEEDED else None,
            failure_reason=job.get("FailureReason") if status is TrainingStatus.FAILED else None,
            cost=cost,
            message=status_note(ProviderKind.SAGEMAKER, provider_status),
        )

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        try:
            self._client().stop_training_job(TrainingJobName=spec.job_name)
        except (ClientError, BotoCoreError, NotImplementedError) as error:
            fault = _fault(f"SageMaker StopTrainingJob for {spec.job_name}", error)
            return _after_refusal(self.describe, spec, fault, ended=True)
        return self.describe(spec, job_id)


def create_training_request(spec: JobSpec, role_arn: str, region: str) -> dict[str, Any]:
    """The CreateTrainingJob parameters of ``spec``: serverless customization, LoRA, train and
    validation channels as SageMaker's own trainers name them."""
    channels = [("train", spec.train_uri)]
    if spec.validation_uri:
        channels.append(("validation", spec.validation_uri))
    request: dict[str, Any] = {
        "TrainingJobName": spec.job_name,
        "RoleArn": role_arn,
        "ServerlessJobConfig": {
            "BaseModelArn": hub_model_arn(spec.base_model, region),
            "JobType": "FineTuning",
            "CustomizationTechnique": _TECHNIQUES[spec.method],
            "Peft": "LORA",
        },
        "InputDataConfig": [
            {
                "ChannelName": name,
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": uri,
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
                "ContentType": "application/jsonlines",
            }
            for name, uri in channels
        ],
        "OutputDataConfig": {"S3OutputPath": spec.output_uri},
    }
    if spec.hyperparameters:
        request["HyperParameters"] = dict(spec.hyperparameters)
    return request


def jobs_for(connection: ConnectionRecord) -> TrainingJobs:
    """The training jobs of ``connection``'s provider."""
    if connection.provider is ProviderKind.BEDROCK and connection.region:
        return BedrockJobs(connection.region)
    if connection.provider is ProviderKind.SAGEMAKER and connection.region:
        return SageMakerJobs(connection.region)
    if connection.provider is ProviderKind.OPENAI_COMPATIBLE and connection.base_url:
        secret_arn = connection.secret_arn
        return OpenAICompatibleJobs(
            connection.base_url, api_key=(lambda: _read_key(secret_arn)) if secret_arn else lambda: None
        )
    raise ProviderFault(
        f"connection {connection.connection_id} ({connection.provider}) lacks what its provider needs "
        "(a region for bedrock and sagemaker, a base URL for openai-compatible): fix the connection",
        retryable=False,
    )


def _read_key(secret_arn: str) -> str:
    """The connection's API key, read from Secrets Manager at the moment of each call."""
    try:
        return api_key(secret_arn)
    except ModelCallError as error:
        raise ProviderFault(str(error), retryable=error.retryable) from None
