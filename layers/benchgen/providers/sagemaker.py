"""The sagemaker kind: SageMaker serverless customization for training, an endpoint for live runs.

Training is serverless customization (``ServerlessJobConfig`` on CreateTrainingJob) rather than script
mode: botocore's model has it, and it is SageMaker's own SFT/DPO trainer on Public Hub models, so there
is no training image, instance type or training script to choose and keep working, and its DPO rows are
the ``sagemaker-dpo`` export profile's shape. Script mode would need all three from the user. The trained
model (``model.tar.gz``) answers only once deployed to an endpoint, which a sagemaker connection names.
The request shapes and answer readers here are pure; ``benchgen.aws.providers.sagemaker`` makes the calls.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from benchgen.errors import Unsupported
from benchgen.inference.shapes import unreadable
from benchgen.providers.capabilities import ANY_FAMILY, ConnectionLimits, ConnectionProfile
from benchgen.providers.definition import Grant, IamNeeds, ProviderDefinition
from benchgen.providers.jobs import JOB_NAME_PREFIX, JobSpec, JobState, ProviderFault
from benchgen.records.runs import LiveModel
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method, ProviderKind, Sampling

_S = TrainingStatus
INFERENCE_PATH = "a SageMaker endpoint (InvokeEndpoint)"
# Each Public Hub model's recipe names its own training settings, and no list of them is published across
# models, so BenchGen checks only what CreateTrainingJob's HyperParameters map takes (at most 100 names of
# up to 256 characters, values up to 2500) and leaves the names to the recipe: SageMaker refuses the job
# with its own message, which the run keeps.
MAX_HYPERPARAMETERS = 100
_MAX_NAME = 256
_MAX_VALUE = 2500

IAM = IamNeeds(
    calls_models=(
        Grant(
            actions=("sagemaker:InvokeEndpoint",),
            resources=("arn:{partition}:sagemaker:*:{account}:endpoint/*",),
            reason=(
                "A live run names its SageMaker endpoint and region when it is created; the grant stays on "
                "invoking this account's endpoints."
            ),
        ),
    ),
    # Training jobs are named by BenchGen (job_name_for): only those.
    runs_jobs=(
        Grant(
            actions=(
                "sagemaker:CreateTrainingJob",
                "sagemaker:DescribeTrainingJob",
                "sagemaker:StopTrainingJob",
            ),
            resources=(f"arn:{{partition}}:sagemaker:*:{{account}}:training-job/{JOB_NAME_PREFIX}*",),
            reason=(
                "A training run names its region when it is launched; the grant stays on this account's "
                f"training jobs named by BenchGen ({JOB_NAME_PREFIX}...)."
            ),
        ),
    ),
    assumes_role="sagemaker.amazonaws.com",
)


class SageMaker(ProviderDefinition):
    kind = ProviderKind("sagemaker")
    title = "SageMaker training"
    # SFT and DPO, on whatever base model it is given.
    capabilities = ConnectionProfile.model_construct(
        methods=[Method.DEMONSTRATION, Method.PREFERENCE],
        model_families=[ANY_FAMILY],
        export_profiles=["sagemaker-sft", "sagemaker-dpo", "trl-sft", "trl-dpo"],
        limits=ConnectionLimits.model_construct(),
    )
    method_gaps = MappingProxyType(
        {
            Method.REINFORCEMENT: "SageMaker serverless customization offers SFT and DPO techniques only: "
            "download the trl-grpo package to train it with GRPO on your own instances"
        }
    )
    inference_path = INFERENCE_PATH
    # "Stopping" is still running: the job may yet finish before the stop takes. "Deleting" means the job is
    # being removed by someone outside BenchGen, so nothing more will come of it.
    statuses = MappingProxyType(
        {
            "inprogress": _S.RUNNING,
            "completed": _S.SUCCEEDED,
            "failed": _S.FAILED,
            "stopping": _S.RUNNING,
            "stopped": _S.CANCELLED,
            "deleting": _S.CANCELLED,
        }
    )
    requires = frozenset({"region"})
    accepts = frozenset({"role_arn", "endpoint_name", "timeout_s"})
    inference_field = "endpoint_name"
    inference_gap = f"names no endpoint, and live runs on SageMaker call {INFERENCE_PATH}"
    iam = IAM
    batch_gap = (
        "a SageMaker endpoint has no batch inference API for live runs: set inference_mode to on_demand "
        "(its cases are asked concurrently, up to limits.max_in_flight), or serve the model on Bedrock or "
        "an OpenAI-compatible host with a Batch API for batch runs"
    )

    def check_hyperparameters(
        self, base_model: str, values: Mapping[str, str | int | float]
    ) -> dict[str, str]:
        """The values as the strings the HyperParameters map takes, within its limits."""
        problems: list[str] = []
        if len(values) > MAX_HYPERPARAMETERS:
            problems.append(f"{len(values)} hyperparameters are more than the {MAX_HYPERPARAMETERS} it takes")
        checked: dict[str, str] = {}
        for name, value in values.items():
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            if not name or len(name) > _MAX_NAME:
                problems.append(f"a hyperparameter name must be 1 to {_MAX_NAME} characters")
            elif len(text) > _MAX_VALUE:
                problems.append(f"{name}'s value is longer than {_MAX_VALUE} characters")
            else:
                checked[name] = text
        if problems:
            raise Unsupported(
                f"{'; '.join(problems)}: SageMaker takes the names the base model's recipe documents, as text"
            )
        return checked

    def where(self, live: LiveModel) -> str:
        return f"SageMaker endpoint {live.endpoint_name or live.model_id} in {live.region}"

    def result_not_served(self, result_model: str | None) -> str | None:
        return (
            f"a SageMaker training result ({result_model}) answers only from an endpoint: deploy it, create "
            "a sagemaker connection naming that endpoint, and pass tuned = {connection_id: that connection, "
            "model_id: the model's name}"
        )


PROVIDER = SageMaker()

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


def job_state(job: Mapping[str, Any]) -> JobState:
    """What a DescribeTrainingJob answer says; the result is the model artifacts' S3 URI."""
    provider_status = str(job.get("TrainingJobStatus", ""))
    status = PROVIDER.status(provider_status)
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
        message=PROVIDER.status_note(provider_status),
    )


def generate_request(prompt: str, sampling: Sampling) -> dict[str, Any]:
    """A TGI / LMI ``{"inputs", "parameters"}`` body; only the continuation is asked for."""
    parameters: dict[str, Any] = {"return_full_text": False}
    if sampling.max_tokens is not None:
        parameters["max_new_tokens"] = sampling.max_tokens
    if sampling.temperature is not None:
        parameters["temperature"] = sampling.temperature
        # TGI refuses temperature 0; greedy decoding is how it asks for the same thing.
        if sampling.temperature == 0:
            del parameters["temperature"]
            parameters["do_sample"] = False
    if sampling.top_p is not None and sampling.top_p < 1:
        parameters["top_p"] = sampling.top_p
    if sampling.stop:
        parameters["stop"] = list(sampling.stop)
    return {"inputs": prompt, "parameters": parameters}


def generated_text(body: Any) -> str:
    """The text of a TGI / LMI answer: ``[{"generated_text"}]``, or one such object (an endpoint on the
    Messages API, TGI 1.4 and later, answers like a chat completion instead)."""
    first = body[0] if isinstance(body, list) and body else body
    if isinstance(first, dict) and isinstance(first.get("generated_text"), str):
        return str(first["generated_text"])
    raise unreadable("SageMaker endpoint", "generated_text", body)
