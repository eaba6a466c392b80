"""The bedrock kind's adapter: model customization jobs and Converse calls in the connection's region."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchgen.aws.clients import regional
from benchgen.aws.providers.faults import (
    MODEL_CALL_ERRORS,
    call,
    job_request,
    missing,
    model_error,
    needs_role,
)
from benchgen.inference.model import Answer, Model, ModelCallError
from benchgen.ports.providers import BatchJobs, TrainingJobs
from benchgen.providers import bedrock, bedrock_batch
from benchgen.providers.batch import BatchJobSpec, BatchState
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.records.runs import LiveModel
from benchgen.vocabulary import Sampling


class BedrockJobs:
    """Bedrock model customization (fine-tuning) jobs in one region, read by their fixed name."""

    def __init__(self, region: str) -> None:
        self._region = region

    def _client(self) -> Any:
        return regional("bedrock", self._region)

    def upload(self, name: str, data: bytes) -> str | None:
        return None  # Bedrock reads the training files from S3, where the pipeline put them

    def start(self, spec: JobSpec) -> JobState:
        request = bedrock.create_customization_request(spec, needs_role(spec, "Bedrock model customization"))
        return job_request(
            f"Bedrock CreateModelCustomizationJob for {spec.job_name}",
            lambda: self._client().create_model_customization_job(**request),
            self.describe,
            spec,
            None,
            ended=False,
        )

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        # By name: the job's ARN does not carry it, and a name always finds the one job.
        job = call(
            f"Bedrock GetModelCustomizationJob for {spec.job_name}",
            lambda: self._client().get_model_customization_job(jobIdentifier=spec.job_name),
        )
        return bedrock.job_state(job)

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        return job_request(
            f"Bedrock StopModelCustomizationJob for {spec.job_name}",
            lambda: self._client().stop_model_customization_job(jobIdentifier=spec.job_name),
            self.describe,
            spec,
            job_id,
            ended=True,
        )


class BedrockConverse:
    """One Bedrock model (a foundation model id, an inference profile or a deployment ARN)."""

    def __init__(self, region: str, model_id: str, sampling: Sampling, *, timeout_s: float) -> None:
        self._region = region
        self._model_id = model_id
        self._sampling = sampling
        self._timeout_s = timeout_s

    def complete(self, prompt: str) -> Answer:
        client = regional("bedrock-runtime", self._region, timeout_s=self._timeout_s)
        try:
            response = client.converse(**bedrock.converse_request(self._model_id, prompt, self._sampling))
        except MODEL_CALL_ERRORS as error:
            raise model_error(f"Bedrock model {self._model_id}", error) from None
        response.pop("ResponseMetadata", None)
        return bedrock.converse_answer(response, json.dumps(response, default=str))


class BedrockBatchJobs:
    """Bedrock model invocation jobs (batch inference) in one region; Bedrock writes their output to S3."""

    def __init__(self, region: str) -> None:
        self._region = region

    def _client(self) -> Any:
        return regional("bedrock", self._region)

    def submit(self, spec: BatchJobSpec, records: Path) -> str:
        if not spec.role_arn:
            raise ProviderFault(
                "Bedrock batch inference reads the records with the stack's batch role, and this deployment "
                "names none (BEDROCK_BATCH_ROLE_ARN): deploy the stack again",
                retryable=False,
            )
        request = bedrock_batch.create_invocation_job_request(spec, spec.role_arn)
        # The client request token is the job's name: a second submit answers the first job's ARN.
        answer = call(
            f"Bedrock CreateModelInvocationJob for {spec.name}",
            lambda: self._client().create_model_invocation_job(**request),
        )
        return str(answer["jobArn"])

    def describe(self, spec: BatchJobSpec, job_id: str) -> BatchState:
        job = call(
            f"Bedrock GetModelInvocationJob for {spec.name}",
            lambda: self._client().get_model_invocation_job(jobIdentifier=job_id),
        )
        return bedrock_batch.job_state(job, spec.records)

    def download(self, file_id: str, path: Path) -> Path:
        raise ProviderFault(
            f"Bedrock batch inference writes its output to S3 itself; there is no file {file_id} to fetch",
            retryable=False,
        )


class Adapter:
    def batch_jobs(self, live: LiveModel) -> BatchJobs:
        if live.region is None:
            raise ProviderFault(missing(live.connection_id, live.provider, "a region"), retryable=False)
        return BedrockBatchJobs(live.region)

    def training_jobs(self, connection: ConnectionRecord) -> TrainingJobs:
        if connection.region is None:
            raise ProviderFault(
                missing(connection.connection_id, connection.provider, "a region"), retryable=False
            )
        return BedrockJobs(connection.region)

    def model(self, live: LiveModel, sampling: Sampling) -> Model:
        if live.region is None:
            raise ModelCallError(missing(live.connection_id, live.provider, "a region"), retryable=False)
        return BedrockConverse(live.region, live.model_id, sampling, timeout_s=live.timeout_s)


ADAPTER = Adapter()
