"""The bedrock kind: Amazon Bedrock model customization for training, Bedrock Converse for live runs.

Jobs are ``CreateModelCustomizationJob`` (fine-tuning) on files in the data bucket, keyed by the job's
fixed name: Bedrock's job ARNs do not contain it, so the job is always read by name. A custom model answers
only once deployed (a custom model deployment or provisioned throughput), under that deployment's ARN.
The request shapes and answer readers here are pure; ``benchgen.aws.providers.bedrock`` makes the calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from benchgen.errors import Unsupported
from benchgen.inference.model import Answer
from benchgen.inference.shapes import converse_usage, unreadable
from benchgen.providers.capabilities import ConnectionLimits, ConnectionProfile, family_matches
from benchgen.providers.definition import Grant, IamNeeds, ProviderDefinition
from benchgen.providers.hyperparameters import Hyperparameter, check_named
from benchgen.providers.jobs import JobSpec, JobState
from benchgen.records.runs import LiveModel
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method, ProviderKind, Sampling

_S = TrainingStatus
_INT, _FLOAT, _BOOL = int, float, bool
# The documented hyperparameters per model family (the customization pages' tables).
HYPERPARAMETERS: Mapping[str, Mapping[str, Hyperparameter]] = MappingProxyType(
    {
        "nova": {
            "epochCount": Hyperparameter(_INT, 1, 5),
            "learningRate": Hyperparameter(_FLOAT, 1e-6, 1e-4),
            "learningRateWarmupSteps": Hyperparameter(_INT, 0, 100),
        },
        "llama3.1": {
            "epochCount": Hyperparameter(_INT, 1, 10),
            "batchSize": Hyperparameter(_INT, 1, 1),
            "learningRate": Hyperparameter(_FLOAT, 5e-6, 0.1),
        },
        "claude-3-haiku": {
            "epochCount": Hyperparameter(_INT, 1, 10),
            "batchSize": Hyperparameter(_INT, 4, 256),
            "learningRateMultiplier": Hyperparameter(_FLOAT, 0.1, 2),
            "earlyStoppingEnabled": Hyperparameter(_BOOL),
            "earlyStoppingThreshold": Hyperparameter(_FLOAT, 0, 0.1),
            "earlyStoppingPatience": Hyperparameter(_INT, 1, 10),
        },
    }
)

# Bedrock resources a live run may name besides foundation models.
MODEL_RESOURCE_KINDS = (
    "inference-profile",
    "application-inference-profile",
    "custom-model-deployment",
    "provisioned-model",
)
FOUNDATION_MODELS = "arn:{partition}:bedrock:*::foundation-model/*"

IAM = IamNeeds(
    # Converse is authorized as InvokeModel: on foundation models (any region: cross-region inference
    # profiles route there), and on this account's profiles, deployments and provisioned models.
    calls_models=(
        Grant(
            actions=("bedrock:InvokeModel",),
            resources=(
                FOUNDATION_MODELS,
                *(f"arn:{{partition}}:bedrock:*:{{account}}:{kind}/*" for kind in MODEL_RESOURCE_KINDS),
            ),
            reason=(
                "A live run names its Bedrock model (a foundation model, an inference profile, a deployment "
                "or a provisioned model) and its region when it is created; the grant stays on model "
                "invocation in this account (and on foundation models, which have no account)."
            ),
        ),
    ),
    # Job ARNs end in a random id, not the job name, so jobs cannot be narrowed by name; a job is created
    # from a foundation model into a custom model of this account.
    runs_jobs=(
        Grant(
            actions=(
                "bedrock:CreateModelCustomizationJob",
                "bedrock:GetModelCustomizationJob",
                "bedrock:StopModelCustomizationJob",
            ),
            resources=(
                FOUNDATION_MODELS,
                "arn:{partition}:bedrock:*:{account}:model-customization-job/*",
                "arn:{partition}:bedrock:*:{account}:custom-model/*",
            ),
            reason=(
                "A training run names its base model and region when it is launched, and Bedrock names its "
                "jobs and custom models by ids that exist only then (a job's ARN does not even hold its "
                "name); the grant stays on model customization in this account (and on foundation models, "
                "which have no account)."
            ),
        ),
    ),
    assumes_role="bedrock.amazonaws.com",
    # Batch inference jobs are named by ids Bedrock gives them; a job is created on the run's model (a
    # foundation model, or a profile, deployment or provisioned model of this account).
    runs_batches=(
        Grant(
            actions=("bedrock:CreateModelInvocationJob", "bedrock:GetModelInvocationJob"),
            resources=(
                FOUNDATION_MODELS,
                "arn:{partition}:bedrock:*:{account}:model-invocation-job/*",
                *(f"arn:{{partition}}:bedrock:*:{{account}}:{kind}/*" for kind in MODEL_RESOURCE_KINDS),
            ),
            reason=(
                "A live run names its Bedrock model and region when it is created, and Bedrock names its "
                "batch inference jobs by ids that exist only when they are created; the grant stays on "
                "model invocation jobs in this account (and on foundation models, which have no account)."
            ),
        ),
    ),
)


class Bedrock(ProviderDefinition):
    kind = ProviderKind("bedrock")
    title = "Bedrock model customization"
    # Demonstration only (no preference type); Nova, Llama 3.1 and Claude 3 Haiku; Nova takes up to 20,000
    # training rows, the most of the three (Llama 3.1 takes 10,000, which its export profile enforces).
    capabilities = ConnectionProfile.model_construct(
        methods=[Method.DEMONSTRATION],
        model_families=list(HYPERPARAMETERS),
        export_profiles=["bedrock-conversation", "bedrock-prompt-completion"],
        limits=ConnectionLimits.model_construct(max_rows=20_000),
    )
    method_gaps = MappingProxyType(
        {
            Method.PREFERENCE: "Bedrock model customization has no preference type",
            # Bedrock has the type (customizationType REINFORCEMENT_FINE_TUNING), but its grader is a Lambda
            # function of the trainer's own account, which a connection cannot deploy for them.
            Method.REINFORCEMENT: "BenchGen does not start Bedrock reinforcement fine-tuning, whose grader "
            "is a Lambda function in your account: download the bedrock-rft package, deploy its grader.py "
            "as that Lambda and start the job with customizationType REINFORCEMENT_FINE_TUNING",
        }
    )
    family_gap = "Bedrock model customization fine-tunes only Nova, Llama 3.1 and Claude 3 Haiku models"
    inference_path = "Bedrock Converse"
    # "Stopping" is still running: the job may yet finish before the stop takes.
    statuses = MappingProxyType(
        {
            "inprogress": _S.RUNNING,
            "completed": _S.SUCCEEDED,
            "failed": _S.FAILED,
            "stopping": _S.RUNNING,
            "stopped": _S.CANCELLED,
        }
    )
    requires = frozenset({"region"})
    accepts = frozenset({"role_arn", "timeout_s"})
    iam = IAM
    batch_module = "bedrock_batch"

    def check_hyperparameters(
        self, base_model: str, values: Mapping[str, str | int | float]
    ) -> dict[str, str]:
        for family, accepted in HYPERPARAMETERS.items():
            if family_matches(family, base_model):
                return check_named(self.kind, base_model, accepted, values)
        raise Unsupported(
            f"Bedrock model customization documents hyperparameters only for {', '.join(HYPERPARAMETERS)} "
            f"models, and base model {base_model} is none of them: choose a Nova, Llama 3.1 or Claude 3 "
            "Haiku base model"
        )

    def where(self, live: LiveModel) -> str:
        return f"Bedrock model {live.model_id} in {live.region}"

    def result_not_served(self, result_model: str | None) -> str | None:
        return (
            f"a Bedrock custom model ({result_model}) answers only once deployed: create a custom model "
            "deployment (or provisioned throughput) for it and pass tuned = {connection_id: a bedrock "
            "connection of yours, model_id: the deployment or provisioned model ARN}"
        )


PROVIDER = Bedrock()


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


def job_state(job: Mapping[str, Any]) -> JobState:
    """What a GetModelCustomizationJob answer says."""
    provider_status = str(job.get("status", ""))
    status = PROVIDER.status(provider_status)
    return JobState(
        provider_status=provider_status,
        status=status,
        job_id=job.get("jobArn"),
        result_model=job.get("outputModelArn") if status is TrainingStatus.SUCCEEDED else None,
        failure_reason=job.get("failureMessage") if status is TrainingStatus.FAILED else None,
        message=PROVIDER.status_note(provider_status),
    )


def converse_request(model_id: str, prompt: str, sampling: Sampling) -> dict[str, Any]:
    """Keyword arguments of ``bedrock-runtime.converse``: ``messages`` of content blocks,
    ``inferenceConfig`` in camelCase."""
    config: dict[str, Any] = {}
    if sampling.max_tokens is not None:
        config["maxTokens"] = sampling.max_tokens
    if sampling.temperature is not None:
        config["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        config["topP"] = sampling.top_p
    if sampling.stop:
        config["stopSequences"] = list(sampling.stop)
    request: dict[str, Any] = {
        "modelId": model_id,
        "messages": [{"role": "user", "content": [{"text": prompt}]}],
    }
    if config:
        request["inferenceConfig"] = config
    return request


def _reasoning_text(block: Any) -> str | None:
    """A content block's reasoning: ``reasoningContent.reasoningText.text``. Its other member,
    ``redactedContent``, is reasoning the provider encrypted, which has no text to keep."""
    content = block.get("reasoningContent") if isinstance(block, dict) else None
    reasoning = content.get("reasoningText") if isinstance(content, dict) else None
    text = reasoning.get("text") if isinstance(reasoning, dict) else None
    return text if isinstance(text, str) else None


def converse_answer(response: dict[str, Any], raw: str) -> Answer:
    """A Converse answer: its text blocks (``output.message.content[].text``) joined, its reasoning
    blocks (``reasoningContent``) kept apart, and its tokens (Converse's ``usage`` counts no reasoning
    tokens apart: they are inside ``outputTokens``)."""
    try:
        blocks = response["output"]["message"]["content"]
        text = "".join(block["text"] for block in blocks if "text" in block)
    except (KeyError, TypeError):
        raise unreadable("Bedrock Converse", "output.message.content", response) from None
    reasoning = "\n\n".join(part for part in map(_reasoning_text, blocks) if part)
    input_tokens, output_tokens = converse_usage(response)
    return Answer(
        text=text,
        raw=raw,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        reasoning=reasoning or None,
    )
