"""The requests the AWS job adapters send, checked against botocore's service models, and their faults.

botocore's Stubber runs each call through the client's own parameter validation (types, required
members, minimum lengths); :func:`conforms` adds what that validation leaves out: every string's pattern
and maximum length, every enum, and no member the model does not have.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError
from botocore.model import Shape
from botocore.stub import Stubber

from benchgen.aws import training_jobs
from benchgen.aws.training_jobs import (
    BedrockJobs,
    SageMakerJobs,
    create_customization_request,
    create_training_request,
)
from benchgen.providers.jobs import JobSpec, ProviderFault, job_name_for
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/benchgen-training"
RUN_ID = "train-0123456789abcdef01234567"
JOB = job_name_for(RUN_ID)
BEDROCK_ARN = (
    f"arn:aws:bedrock:{REGION}:123456789012:model-customization-job/amazon.nova-micro-v1:0:128k/abcdef123456"
)
HUB_MODEL = "meta-textgeneration-llama-3-1-8b-instruct"


def spec(**changes: Any) -> JobSpec:
    fields: dict[str, Any] = {
        "training_run_id": RUN_ID,
        "job_name": JOB,
        "method": Method.DEMONSTRATION,
        "base_model": "amazon.nova-micro-v1:0:128k",
        "hyperparameters": {"epochCount": "2", "learningRate": "1e-05"},
        "train_uri": f"s3://data-bucket/training/{RUN_ID}/train.jsonl",
        "validation_uri": f"s3://data-bucket/training/{RUN_ID}/validation.jsonl",
        "output_uri": f"s3://data-bucket/training/{RUN_ID}/output/",
        "role_arn": ROLE,
    }
    return JobSpec(**(fields | changes))


def conforms(shape: Shape, value: Any, where: str = "request") -> list[str]:
    """What in ``value`` breaks ``shape`` beyond botocore's own validation."""
    problems: list[str] = []
    if shape.type_name == "structure":
        for name, member in value.items():
            if name not in shape.members:
                problems.append(f"{where}.{name} is not in the model")
            else:
                problems += conforms(shape.members[name], member, f"{where}.{name}")
        problems += [f"{where}.{name} is required" for name in shape.required_members if name not in value]
    elif shape.type_name == "list":
        for index, item in enumerate(value):
            problems += conforms(shape.member, item, f"{where}[{index}]")
    elif shape.type_name == "map":
        for key, item in value.items():
            problems += conforms(shape.key, key, f"{where} key")
            problems += conforms(shape.value, item, f"{where}[{key}]")
    elif shape.type_name == "string":
        meta = shape.metadata
        if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
            problems.append(f"{where}={value!r} does not match {meta['pattern']}")
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{where} is longer than {meta['max']}")
        if shape.enum and value not in shape.enum:
            problems.append(f"{where}={value!r} is not one of {shape.enum}")
    return problems


def input_shape(service: str, operation: str) -> Shape:
    return boto3.client(service, region_name=REGION).meta.service_model.operation_model(operation).input_shape


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Stubber]]:
    """Stubbed bedrock and sagemaker clients, handed to the adapters in place of the shared ones."""
    clients = {name: boto3.client(name, region_name=REGION) for name in ("bedrock", "sagemaker")}
    stubbers = {name: Stubber(client) for name, client in clients.items()}
    monkeypatch.setattr(training_jobs, "regional", lambda service, region: clients[service])
    for stubber in stubbers.values():
        stubber.activate()
    yield stubbers
    for stubber in stubbers.values():
        stubber.assert_no_pending_responses()


def bedrock_job(status: str, **fields: Any) -> dict[str, Any]:
    return {
        "jobArn": BEDROCK_ARN,
        "jobName": JOB,
        "outputModelName": JOB,
        "roleArn": ROLE,
        "status": status,
        "creationTime": "2026-12-01T00:00:00Z",
        "baseModelArn": "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-micro-v1:0:128k",
        "hyperParameters": {"epochCount": "2"},
        "trainingDataConfig": {"s3Uri": spec().train_uri},
        "validationDataConfig": {"validators": [{"s3Uri": str(spec().validation_uri)}]},
        "outputDataConfig": {"s3Uri": spec().output_uri},
        **fields,
    }


def test_the_bedrock_request_conforms_to_the_service_model() -> None:
    request = create_customization_request(spec(), ROLE)
    assert conforms(input_shape("bedrock", "CreateModelCustomizationJob"), request) == []
    assert request["jobName"] == request["customModelName"] == "benchgen-train-0123456789abcdef01234567"
    assert request["validationDataConfig"] == {"validators": [{"s3Uri": spec().validation_uri}]}


def test_the_shape_check_catches_what_botocore_lets_through() -> None:
    request = create_customization_request(spec(job_name="bad name!"), ROLE) | {"customizationType": "DPO"}
    assert conforms(input_shape("bedrock", "CreateModelCustomizationJob"), request) == [
        "request.jobName='bad name!' does not match [a-zA-Z0-9](-*[a-zA-Z0-9\\+\\-\\.])*",
        "request.customModelName='bad name!' does not match ([0-9a-zA-Z][_-]?){1,63}",
        "request.customizationType='DPO' is not one of "
        "['FINE_TUNING', 'CONTINUED_PRE_TRAINING', 'DISTILLATION', 'REINFORCEMENT_FINE_TUNING', 'IMPORTED']",
    ]


@pytest.mark.parametrize("method", [Method.DEMONSTRATION, Method.PREFERENCE])
def test_the_sagemaker_request_is_serverless_customization_and_conforms(method: Method) -> None:
    request = create_training_request(
        spec(method=method, base_model=HUB_MODEL, hyperparameters={"learning_rate": "0.0001"}), ROLE, REGION
    )
    assert conforms(input_shape("sagemaker", "CreateTrainingJob"), request) == []
    assert request["ServerlessJobConfig"] == {
        "BaseModelArn": f"arn:aws:sagemaker:us-east-1:aws:hub-content/SageMakerPublicHub/Model/{HUB_MODEL}",
        "JobType": "FineTuning",
        "CustomizationTechnique": "SFT" if method is Method.DEMONSTRATION else "DPO",
        "Peft": "LORA",
    }
    assert [channel["ChannelName"] for channel in request["InputDataConfig"]] == ["train", "validation"]
    assert "AlgorithmSpecification" not in request


def test_a_sagemaker_base_model_that_is_no_hub_model_is_refused_before_any_call() -> None:
    with pytest.raises(ProviderFault) as refused:
        create_training_request(spec(base_model="meta.llama3-1-8b-instruct-v1:0"), ROLE, REGION)
    assert refused.value.retryable is False
    assert "base model 'meta.llama3-1-8b-instruct-v1:0' is neither a hub model id" in str(refused.value)


def test_bedrock_start_sends_the_checked_request_and_reads_the_job_back_by_name(
    stubbed: dict[str, Stubber],
) -> None:
    bedrock = stubbed["bedrock"]
    bedrock.add_response(
        "create_model_customization_job", {"jobArn": BEDROCK_ARN}, create_customization_request(spec(), ROLE)
    )
    bedrock.add_response("get_model_customization_job", bedrock_job("InProgress"), {"jobIdentifier": JOB})
    state = BedrockJobs(REGION).start(spec())
    assert (state.provider_status, state.status, state.job_id) == (
        "InProgress",
        TrainingStatus.RUNNING,
        BEDROCK_ARN,
    )
    assert state.result_model is None


def test_a_second_bedrock_start_of_the_same_name_returns_the_existing_job(
    stubbed: dict[str, Stubber],
) -> None:
    bedrock = stubbed["bedrock"]
    bedrock.add_client_error(
        "create_model_customization_job",
        service_error_code="ConflictException",
        service_message=f"A job named {JOB} already exists",
        http_status_code=409,
    )
    bedrock.add_response(
        "get_model_customization_job",
        bedrock_job("Completed", outputModelArn="arn:aws:bedrock:us-east-1:123456789012:custom-model/x"),
        {"jobIdentifier": JOB},
    )
    state = BedrockJobs(REGION).start(spec())
    assert state.status is TrainingStatus.SUCCEEDED
    assert state.result_model == "arn:aws:bedrock:us-east-1:123456789012:custom-model/x"


def test_a_refused_bedrock_start_keeps_the_providers_message_and_is_not_retried(
    stubbed: dict[str, Stubber],
) -> None:
    bedrock = stubbed["bedrock"]
    message = "The provided base model identifier is not supported for fine-tuning"
    bedrock.add_client_error("create_model_customization_job", "ValidationException", message, 400)
    bedrock.add_client_error("get_model_customization_job", "ResourceNotFoundException", "not found", 404)
    with pytest.raises(ProviderFault) as refused:
        BedrockJobs(REGION).start(spec())
    assert refused.value.retryable is False
    assert str(refused.value) == (
        f"Bedrock CreateModelCustomizationJob for {JOB} answered ValidationException: {message}"
    )


@pytest.mark.parametrize(
    ("code", "status"),
    [("ThrottlingException", 429), ("InternalServerException", 500), ("ServiceUnavailable", 503)],
)
def test_throttling_and_service_faults_are_retryable(
    stubbed: dict[str, Stubber], code: str, status: int
) -> None:
    stubbed["bedrock"].add_client_error("get_model_customization_job", code, "try again", status)
    with pytest.raises(ProviderFault) as fault:
        BedrockJobs(REGION).describe(spec(), None)
    assert fault.value.retryable is True
    assert code in str(fault.value)


def test_a_timeout_is_retryable(monkeypatch: pytest.MonkeyPatch) -> None:
    class TimingOut:
        def get_model_customization_job(self, **_: Any) -> Any:
            raise ReadTimeoutError(endpoint_url="https://bedrock.us-east-1.amazonaws.com")

    monkeypatch.setattr(training_jobs, "regional", lambda service, region: TimingOut())
    with pytest.raises(ProviderFault) as fault:
        BedrockJobs(REGION).describe(spec(), None)
    assert fault.value.retryable is True
    assert str(fault.value).startswith(
        f"could not reach Bedrock GetModelCustomizationJob for {JOB}: Read timeout"
    )


def test_a_failed_bedrock_job_reports_the_providers_message(stubbed: dict[str, Stubber]) -> None:
    stubbed["bedrock"].add_response(
        "get_model_customization_job",
        bedrock_job("Failed", failureMessage="Training data contains reserved string 'User:'"),
        {"jobIdentifier": JOB},
    )
    state = BedrockJobs(REGION).describe(spec(), None)
    assert (state.status, state.failure_reason) == (
        TrainingStatus.FAILED,
        "Training data contains reserved string 'User:'",
    )


def test_stopping_a_bedrock_job_that_already_ended_returns_its_end(stubbed: dict[str, Stubber]) -> None:
    bedrock = stubbed["bedrock"]
    bedrock.add_client_error(
        "stop_model_customization_job", "ValidationException", "Job is not in progress", 400
    )
    bedrock.add_response("get_model_customization_job", bedrock_job("Completed"), {"jobIdentifier": JOB})
    assert BedrockJobs(REGION).stop(spec(), BEDROCK_ARN).status is TrainingStatus.SUCCEEDED


def test_sagemaker_describe_reports_the_artifacts_and_billed_time(stubbed: dict[str, Stubber]) -> None:
    artifacts = f"s3://data-bucket/training/{RUN_ID}/output/{JOB}/output/model.tar.gz"
    stubbed["sagemaker"].add_response(
        "describe_training_job",
        {
            "TrainingJobName": JOB,
            "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{JOB}",
            "ModelArtifacts": {"S3ModelArtifacts": artifacts},
            "TrainingJobStatus": "Completed",
            "SecondaryStatus": "Completed",
            "AlgorithmSpecification": {"TrainingInputMode": "File"},
            "CreationTime": "2026-12-01T00:00:00Z",
            "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
            "BillableTimeInSeconds": 1260,
            "TrainingTimeInSeconds": 1300,
        },
        {"TrainingJobName": JOB},
    )
    state = SageMakerJobs(REGION).describe(spec(), None)
    assert (state.status, state.result_model) == (TrainingStatus.SUCCEEDED, artifacts)
    assert state.cost == {"BillableTimeInSeconds": 1260.0, "TrainingTimeInSeconds": 1300.0}


def test_sagemaker_start_sends_the_serverless_request(stubbed: dict[str, Stubber]) -> None:
    sagemaker = stubbed["sagemaker"]
    job_spec = spec(base_model=HUB_MODEL, hyperparameters={})
    sagemaker.add_response(
        "create_training_job",
        {"TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{JOB}"},
        create_training_request(job_spec, ROLE, REGION),
    )
    sagemaker.add_response(
        "describe_training_job",
        {
            "TrainingJobName": JOB,
            "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{JOB}",
            "ModelArtifacts": {"S3ModelArtifacts": ""},
            "TrainingJobStatus": "InProgress",
            "SecondaryStatus": "Starting",
            "CreationTime": "2026-12-01T00:00:00Z",
            "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        },
        {"TrainingJobName": JOB},
    )
    state = SageMakerJobs(REGION).start(job_spec)
    assert (state.provider_status, state.status, state.result_model) == (
        "InProgress",
        TrainingStatus.RUNNING,
        None,
    )


def test_a_job_without_a_role_is_refused_saying_what_to_fix() -> None:
    with pytest.raises(
        ProviderFault, match="this connection names none: record the connection again with role_arn"
    ):
        BedrockJobs(REGION).start(spec(role_arn=None))
