"""The bedrock kind's local fake: moto's model customization jobs, run by the provider clock, and the
batch inference jobs moto lacks (``bedrock_batch.py``).

moto 5.2.5 keeps a customization job ``InProgress`` forever, with its output model already named and a
failure message already set. While installed, a job is read through the clock (``InProgress`` until it
ends ``Completed`` or ``Failed``), and shows ``outputModelArn`` only once completed and ``failureMessage``
only once failed, as Bedrock does.
"""

from __future__ import annotations

from typing import Any

from localcloud.provider_clock import ProviderClock
from localcloud.providers import bedrock_batch


def install(clock: ProviderClock) -> None:
    from moto.bedrock import models as bedrock

    bedrock_batch.install(bedrock_batch.jobs_of(clock), clock.patch)

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

    clock.patch(bedrock.BedrockBackend, "get_model_customization_job", get_model_customization_job)
    clock.patch(bedrock.ModelCustomizationJob, "to_dict", to_dict)


def _advance(clock: ProviderClock, job: Any) -> None:
    if job.status != "InProgress":
        return
    ending = clock.tick(job.job_name)
    if ending == "Failed":
        job.status, job.failure_message = "Failed", clock.failure(job.job_name)
    elif ending == "Completed":
        job.status = "Completed"
