"""The sagemaker kind's adapter: serverless customization training jobs, and endpoint calls for live runs,
in the connection's region."""

from __future__ import annotations

import json
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
from benchgen.inference.shapes import chat_answer, chat_request, parse_json
from benchgen.ports.providers import BatchJobs, TrainingJobs
from benchgen.providers import sagemaker
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.records.runs import LiveModel
from benchgen.vocabulary import Sampling


class SageMakerJobs:
    """SageMaker serverless customization jobs (SFT or DPO with LoRA) in one region."""

    def __init__(self, region: str) -> None:
        self._region = region

    def _client(self) -> Any:
        return regional("sagemaker", self._region)

    def upload(self, name: str, data: bytes) -> str | None:
        return None  # SageMaker reads the training files from S3, where the pipeline put them

    def start(self, spec: JobSpec) -> JobState:
        role = needs_role(spec, "SageMaker training")
        request = sagemaker.create_training_request(spec, role, self._region)
        return job_request(
            f"SageMaker CreateTrainingJob for {spec.job_name}",
            lambda: self._client().create_training_job(**request),
            self.describe,
            spec,
            None,
            ended=False,
        )

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        job = call(
            f"SageMaker DescribeTrainingJob for {spec.job_name}",
            lambda: self._client().describe_training_job(TrainingJobName=spec.job_name),
        )
        return sagemaker.job_state(job)

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        return job_request(
            f"SageMaker StopTrainingJob for {spec.job_name}",
            lambda: self._client().stop_training_job(TrainingJobName=spec.job_name),
            self.describe,
            spec,
            job_id,
            ended=True,
        )


class SageMakerEndpoint:
    """One SageMaker endpoint serving TGI / LMI, through ``{"inputs"}`` or the Messages API."""

    def __init__(
        self, region: str, endpoint_name: str, sampling: Sampling, *, messages_api: bool, timeout_s: float
    ) -> None:
        self._region = region
        self._endpoint_name = endpoint_name
        self._sampling = sampling
        self._messages_api = messages_api
        self._timeout_s = timeout_s

    def complete(self, prompt: str) -> Answer:
        request: dict[str, Any] = (
            chat_request(None, prompt, self._sampling)
            if self._messages_api
            else sagemaker.generate_request(prompt, self._sampling)
        )
        client = regional("sagemaker-runtime", self._region, timeout_s=self._timeout_s)
        try:
            response = client.invoke_endpoint(
                EndpointName=self._endpoint_name,
                ContentType="application/json",
                Accept="application/json",
                Body=json.dumps(request).encode(),
            )
            raw = response["Body"].read().decode("utf-8", errors="replace")
        except MODEL_CALL_ERRORS as error:
            raise model_error(f"SageMaker endpoint {self._endpoint_name}", error) from None
        parsed = parse_json(raw, f"SageMaker endpoint {self._endpoint_name}")
        if self._messages_api:
            return chat_answer(parsed, raw)
        return Answer(text=sagemaker.generated_text(parsed), raw=raw)


class Adapter:
    def batch_jobs(self, live: LiveModel) -> BatchJobs:
        raise ProviderFault(sagemaker.PROVIDER.batch_gap, retryable=False)

    def training_jobs(self, connection: ConnectionRecord) -> TrainingJobs:
        if connection.region is None:
            raise ProviderFault(
                missing(connection.connection_id, connection.provider, "a region"), retryable=False
            )
        return SageMakerJobs(connection.region)

    def model(self, live: LiveModel, sampling: Sampling) -> Model:
        if live.region is None:
            raise ModelCallError(missing(live.connection_id, live.provider, "a region"), retryable=False)
        endpoint = live.endpoint_name or live.model_id
        return SageMakerEndpoint(
            live.region, endpoint, sampling, messages_api=live.messages_api, timeout_s=live.timeout_s
        )


ADAPTER = Adapter()
