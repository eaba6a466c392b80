"""Bedrock batch inference: model invocation jobs (``CreateModelInvocationJob``) over JSONL in S3.

Records are ``{"recordId", "modelInput"}``, the input a Converse request takes (the job says
``modelInvocationType: Converse``, so one shape serves every model); Bedrock writes
``<output>/<job id>/<input file>.out``, each line the record with its ``modelOutput`` (a Converse answer)
or its ``error``, and ``manifest.json.out`` with the job's counts, when the job ends.
Limits are the Bedrock service quotas' defaults for a job (adjustable per account).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from benchgen.inference.model import ModelCallError
from benchgen.providers.batch import (
    BatchApi,
    BatchJobSpec,
    BatchLimits,
    BatchState,
    BatchStatus,
    RecordResult,
    answered,
    job_count,
    record_id,
    record_index,
)
from benchgen.providers.bedrock import converse_answer, converse_request
from benchgen.vocabulary import Sampling

INPUT_FILE = "records.jsonl"
MANIFEST = "manifest.json.out"
# Bedrock ends a job that has not finished after this many hours (24 is its default and its minimum).
TIMEOUT_HOURS = 24
_S = BatchStatus


class BedrockBatch(BatchApi):
    title = "Bedrock batch inference"
    # "Minimum number of records per batch inference job", "Records per batch inference job" and "Batch
    # inference input file size (in GB)": one input file a job here.
    limits = BatchLimits(min_records=100, max_records=50_000, max_bytes=1_000_000_000)
    # "Stopping" may still end completed; a job that ends without output is failed.
    statuses = MappingProxyType(
        {
            "submitted": _S.RUNNING,
            "validating": _S.RUNNING,
            "scheduled": _S.RUNNING,
            "inprogress": _S.RUNNING,
            "stopping": _S.RUNNING,
            "completed": _S.ENDED,
            "partiallycompleted": _S.ENDED,
            "failed": _S.FAILED,
            "stopped": _S.FAILED,
            "expired": _S.FAILED,
        }
    )
    output_files = (INPUT_FILE + ".out",)
    record_id_field = "recordId"
    no_output = f"with no output in its output folder (no {MANIFEST})"

    def output_folder(self, job_id: str) -> str:
        # The job's id is the end of its ARN (arn:...:model-invocation-job/<id>).
        return job_id.rsplit("/", 1)[-1]

    def record(self, index: int, model_id: str, prompt: str, sampling: Sampling) -> dict[str, Any]:
        converse = converse_request(model_id, prompt, sampling)
        del converse["modelId"]  # the job names the model
        return {"recordId": record_id(index), "modelInput": converse}

    def results(self, line: dict[str, Any]) -> Iterator[RecordResult]:
        index = record_index(line.get("recordId"))
        if index is None:
            return
        error = line.get("error")
        output = line.get("modelOutput")
        if error is not None or not isinstance(output, dict):
            yield RecordResult(index, None, f"Bedrock batch inference: {_error_text(error)}")
            return
        try:
            answer = converse_answer(output, json.dumps(output, ensure_ascii=False))
        except ModelCallError as unreadable:
            yield RecordResult(index, None, str(unreadable))
            return
        yield answered(index, self.title, answer)


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        code, message = error.get("errorCode"), error.get("errorMessage")
        return f"{message} (error code {code})" if code is not None else str(message)
    return "the record has no modelOutput" if error is None else str(error)


BATCH = BedrockBatch()


def create_invocation_job_request(spec: BatchJobSpec, role_arn: str) -> dict[str, Any]:
    """The CreateModelInvocationJob parameters of ``spec``; the client request token is the job's name,
    so a second submit of the same job is the first one."""
    return {
        "jobName": spec.name,
        "roleArn": role_arn,
        "clientRequestToken": spec.name,
        "modelId": spec.model_id,
        "inputDataConfig": {"s3InputDataConfig": {"s3InputFormat": "JSONL", "s3Uri": spec.input_uri}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": spec.output_uri}},
        "timeoutDurationInHours": TIMEOUT_HOURS,
        "modelInvocationType": "Converse",
    }


def job_state(job: Mapping[str, Any], records: int) -> BatchState:
    """What a GetModelInvocationJob answer about a job of ``records`` records says; raises
    :class:`BatchAnswerError` for a count that cannot be."""
    provider_status = str(job.get("status", ""))
    status = BATCH.status(provider_status)
    message = job.get("message")
    return BatchState(
        provider_status=provider_status,
        status=status,
        succeeded=_count(job, "successRecordCount", records),
        failed=_count(job, "errorRecordCount", records),
        message=str(message) if message else None,
    )


def _count(job: Mapping[str, Any], field: str, records: int) -> int | None:
    return job_count(job.get(field), title=BATCH.title, field=field, records=records)
