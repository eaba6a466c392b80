"""Time for moto's training jobs: they run, then end, as Bedrock's and SageMaker's do.

moto 5.2.5 keeps a Bedrock customization job ``InProgress`` forever (with its output model already
named), and creates a SageMaker training job ``Completed``. Neither lets the training pipeline see a job
run and then end, and the second is kinder than AWS. While a :class:`ProviderClock` is installed:

- a job (either service) is ``InProgress`` until it has been read ``polls_to_complete`` times, then
  ``Completed`` with its result (Bedrock ``outputModelArn``, SageMaker ``ModelArtifacts``), or ``Failed``
  with the message :meth:`ProviderClock.fail` gave it; one it was told to :meth:`~ProviderClock.hold` never
  ends (for timeout tests);
- a Bedrock job shows ``outputModelArn`` only once completed and ``failureMessage`` only once failed (moto
  sets both at creation);
- SageMaker refuses a second training job of the same name (``ResourceInUse``, as AWS does; moto replaces
  the first), and answers ``StopTrainingJob`` (``Stopping``, then ``Stopped``), which moto lacks;
- SageMaker accepts a training job without ``AlgorithmSpecification``: AWS does for serverless
  customization (``ServerlessJobConfig``, which chooses the trainer itself), and moto 5.2.5 fails on it
  with a TypeError.

It replaces moto methods (private, so moto is pinned) while installed and puts them back on uninstall.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

DEFAULT_POLLS_TO_COMPLETE = 2
# SageMaker's default limit for serverless customization jobs, which AWS reports as the job's
# StoppingCondition when the request gave none.
SERVERLESS_MAX_RUNTIME_S = 86_400

_Patch = tuple[Any, str, Any]


class ProviderClock:
    """Advances moto's Bedrock customization jobs and SageMaker training jobs by the reads they get."""

    def __init__(self, polls_to_complete: int = DEFAULT_POLLS_TO_COMPLETE) -> None:
        self.polls_to_complete = polls_to_complete
        self._failures: dict[str, str] = {}
        self._held: set[str] = set()
        self._reads: dict[str, int] = {}
        self._artifacts: dict[str, Any] = {}  # each SageMaker job's artifacts, shown once it completes
        self._lock = threading.Lock()
        self._originals: list[_Patch] = []

    # what tests and the demo ask of it

    def fail(self, job_name: str, message: str) -> None:
        """The job named ``job_name`` ends ``Failed`` with ``message`` instead of completing."""
        with self._lock:
            self._failures[job_name] = message

    def hold(self, job_name: str) -> None:
        """The job named ``job_name`` stays ``InProgress`` however often it is read."""
        with self._lock:
            self._held.add(job_name)

    def reads(self, job_name: str) -> int:
        """How many times the job named ``job_name`` has been read."""
        with self._lock:
            return self._reads.get(job_name, 0)

    # installing

    @property
    def installed(self) -> bool:
        return bool(self._originals)

    def install(self) -> None:
        from moto.bedrock import models as bedrock
        from moto.core.responses import EmptyResult
        from moto.sagemaker import models as sagemaker
        from moto.sagemaker import responses as sagemaker_responses
        from moto.sagemaker.exceptions import ResourceInUseException, ValidationError

        clock = self
        get_job = bedrock.BedrockBackend.get_model_customization_job
        job_view = bedrock.ModelCustomizationJob.to_dict
        create_training = sagemaker.SageMakerModelBackend.create_training_job
        describe_training = sagemaker.SageMakerModelBackend.describe_training_job
        training_init = sagemaker.FakeTrainingJob.__init__

        def get_model_customization_job(backend: Any, job_identifier: str) -> Any:
            job = get_job(backend, job_identifier)
            clock._advance_bedrock(job)
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
                clock._advance_sagemaker(job)
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
            clock._artifacts[job.training_job_name] = job.model_artifacts
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

        self._patch(bedrock.BedrockBackend, "get_model_customization_job", get_model_customization_job)
        self._patch(bedrock.ModelCustomizationJob, "to_dict", to_dict)
        self._patch(sagemaker.SageMakerModelBackend, "create_training_job", create_training_job)
        self._patch(sagemaker.SageMakerModelBackend, "describe_training_job", describe_training_job)
        self._patch(sagemaker.FakeTrainingJob, "__init__", fake_training_job_init)
        self._patch(sagemaker_responses.SageMakerResponse, "stop_training_job", stop_training_job)

    def uninstall(self) -> None:
        for owner, name, original in reversed(self._originals):
            if original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._originals.clear()

    def __enter__(self) -> ProviderClock:
        self.install()
        return self

    def __exit__(self, *_: object) -> None:
        self.uninstall()

    def _patch(self, owner: Any, name: str, replacement: Callable[..., Any]) -> None:
        self._originals.append((owner, name, owner.__dict__.get(name, _ABSENT)))
        setattr(owner, name, replacement)

    # the clock itself

    def _tick(self, job_name: str) -> str | None:
        """Count one read of ``job_name``: "Completed" or "Failed" once it is due to end, else None."""
        with self._lock:
            reads = self._reads.get(job_name, 0) + 1
            self._reads[job_name] = reads
            if job_name in self._held or reads < self.polls_to_complete:
                return None
            return "Failed" if job_name in self._failures else "Completed"

    def _failure(self, job_name: str) -> str:
        with self._lock:
            return self._failures[job_name]

    def _advance_bedrock(self, job: Any) -> None:
        if job.status != "InProgress":
            return
        ending = self._tick(job.job_name)
        if ending == "Failed":
            job.status, job.failure_message = "Failed", self._failure(job.job_name)
        elif ending == "Completed":
            job.status = "Completed"

    def _advance_sagemaker(self, job: Any) -> None:
        if job.training_job_status == "Stopping":
            job.training_job_status, job.secondary_status = "Stopped", "Stopped"
            return
        if job.training_job_status != "InProgress":
            return
        ending = self._tick(job.training_job_name)
        if ending is None:
            job.secondary_status = "Training"
        elif ending == "Failed":
            job.training_job_status, job.secondary_status = "Failed", "Failed"
            job.failure_reason = self._failure(job.training_job_name)
        else:
            job.training_job_status, job.secondary_status = "Completed", "Completed"
            job.model_artifacts = self._artifacts.get(job.training_job_name, job.model_artifacts)
        if ending is not None:
            from moto.core.utils import utcnow

            job.training_end_time = job.last_modified_time = utcnow()


_ABSENT = object()
