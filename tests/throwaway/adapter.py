"""The throwaway kind's adapter: what ``benchgen/aws/providers/throwaway.py`` would hold. Its jobs and
its model answer from memory."""

from __future__ import annotations

from benchgen.inference.model import Answer, Model
from benchgen.ports.providers import TrainingJobs
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, JobState
from benchgen.records.runs import LiveModel
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Sampling


class ThrowawayJobs:
    def upload(self, name: str, data: bytes) -> str | None:
        return None

    def start(self, spec: JobSpec) -> JobState:
        return JobState(provider_status="training", status=TrainingStatus.RUNNING, job_id=spec.job_name)

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        return JobState(
            provider_status="done",
            status=TrainingStatus.SUCCEEDED,
            job_id=spec.job_name,
            result_model=f"{spec.base_model}-tuned",
        )

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        return self.describe(spec, job_id)


class ThrowawayModel:
    def complete(self, prompt: str) -> Answer:
        return Answer(text="OK", raw='{"text": "OK"}')


class Adapter:
    def training_jobs(self, connection: ConnectionRecord) -> TrainingJobs:
        return ThrowawayJobs()

    def model(self, live: LiveModel, sampling: Sampling) -> Model:
        return ThrowawayModel()


ADAPTER = Adapter()
