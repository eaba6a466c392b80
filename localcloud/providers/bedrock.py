"""The bedrock kind's local fake: moto's model customization jobs, run by the provider clock, and the
batch inference jobs moto lacks (``bedrock_batch.py``).

moto 5.2.5 keeps a customization job ``InProgress`` forever, with its output model already named and a
failure message already set. While installed, a job is read through the clock (``InProgress`` until it
ends ``Completed`` or ``Failed``), and shows ``outputModelArn`` only once completed and ``failureMessage``
only once failed, as Bedrock does.
"""

from __future__ import annotations

from typing import Any

from localcloud.iam.actions import Params, Request, Requests, Where, passes_role
from localcloud.patches import Patch
from localcloud.provider_clock import ProviderClock
from localcloud.providers import bedrock_batch


def patches(clock: ProviderClock) -> list[Patch]:
    from moto.bedrock import models as bedrock

    get_job = bedrock.BedrockBackend.get_model_customization_job
    job_view = bedrock.ModelCustomizationJob.to_dict

    def get_model_customization_job(backend: Any, job_identifier: str) -> Any:
        job = get_job(backend, job_identifier)
        _advance(clock, job)
        return job

    def to_dict(job: Any) -> dict[str, Any]:
        view = job_view(job)
        if job.status != "Completed":
            view.pop("outputModelArn", None)
        if job.status != "Failed":
            view.pop("failureMessage", None)
        if job.status in ("InProgress", "Stopping"):
            view.pop("endTime", None)
        return view

    return [
        *bedrock_batch.patches(bedrock_batch.jobs_of(clock)),
        Patch(bedrock.BedrockBackend, "get_model_customization_job", get_model_customization_job),
        Patch(bedrock.ModelCustomizationJob, "to_dict", to_dict),
    ]


def _advance(clock: ProviderClock, job: Any) -> None:
    if job.status != "InProgress":
        return
    ending = clock.tick(job.job_name)
    if ending == "Failed":
        job.status, job.failure_message = "Failed", clock.failure(job.job_name)
    elif ending == "Completed":
        job.status = "Completed"


def _model_arn(model: str, where: Where) -> str:
    """A model identifier as IAM sees it: an ARN as given; a cross-region inference profile's id (a
    geography prefix such as ``us.``) as this account's profile; any other id as a foundation model."""
    if model.startswith("arn:"):
        return model
    if model.split(".", 1)[0] in _PROFILE_GEOGRAPHIES:
        return f"arn:aws:bedrock:{where.region}:{where.account}:inference-profile/{model}"
    return f"arn:aws:bedrock:{where.region}::foundation-model/{model}"


_PROFILE_GEOGRAPHIES = frozenset({"us", "eu", "apac", "us-gov", "jp", "au", "ca", "global"})


def _bedrock_arn(kind: str, identifier: str, where: Where) -> str:
    if identifier.startswith("arn:"):
        return identifier
    return f"arn:aws:bedrock:{where.region}:{where.account}:{kind}/{identifier}"


def _invoke_model(action: str) -> Requests:
    def requests(params: Params, where: Where) -> list[Request]:
        return [Request(action, _model_arn(str(params["modelId"]), where))]

    return requests


def _bedrock_job(action: str, kind: str) -> Requests:
    def requests(params: Params, where: Where) -> list[Request]:
        return [Request(action, _bedrock_arn(kind, str(params["jobIdentifier"]), where))]

    return requests


def _create_customization_job(params: Params, where: Where) -> list[Request]:
    """Authorized on the base model and the custom model it makes (the job is no resource of it)."""
    action = "bedrock:CreateModelCustomizationJob"
    return [
        Request(action, _model_arn(str(params["baseModelIdentifier"]), where)),
        Request(action, _bedrock_arn("custom-model", str(params["customModelName"]), where)),
        passes_role(str(params["roleArn"]), "bedrock"),
    ]


def _create_invocation_job(params: Params, where: Where) -> list[Request]:
    action = "bedrock:CreateModelInvocationJob"
    return [
        Request(action, _bedrock_arn("model-invocation-job", str(params["jobName"]), where)),
        Request(action, _model_arn(str(params["modelId"]), where)),
        passes_role(str(params["roleArn"]), "bedrock"),
    ]


# What IAM authorizes for the calls this kind makes: its models (live runs) and its jobs (training, batch).
IAM_OPERATIONS: dict[str, dict[str, Requests]] = {
    "bedrock-runtime": {
        "InvokeModel": _invoke_model("bedrock:InvokeModel"),
        "Converse": _invoke_model("bedrock:InvokeModel"),
        "InvokeModelWithResponseStream": _invoke_model("bedrock:InvokeModelWithResponseStream"),
        "ConverseStream": _invoke_model("bedrock:InvokeModelWithResponseStream"),
    },
    "bedrock": {
        "CreateModelCustomizationJob": _create_customization_job,
        "GetModelCustomizationJob": _bedrock_job(
            "bedrock:GetModelCustomizationJob", "model-customization-job"
        ),
        "StopModelCustomizationJob": _bedrock_job(
            "bedrock:StopModelCustomizationJob", "model-customization-job"
        ),
        "CreateModelInvocationJob": _create_invocation_job,
        "GetModelInvocationJob": _bedrock_job("bedrock:GetModelInvocationJob", "model-invocation-job"),
        "StopModelInvocationJob": _bedrock_job("bedrock:StopModelInvocationJob", "model-invocation-job"),
    },
}
