"""The OpenAI-compatible Batch API: ``POST /files`` (purpose ``batch``) of JSONL requests, ``POST
/batches`` on that file, ``GET /batches/{id}`` until it ends, ``GET /files/{id}/content`` of its output
and error files.

A request line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``; an output
line ``{"custom_id", "response": {"status_code", "body"}, "error"}``. The output stays with the provider,
so the step that sees a batch end copies its files into the run's output folder, named as below, and
writes the manifest last (as Bedrock does), so that both kinds end the same way.
Limits are OpenAI's documented ones for a batch: 50,000 requests and 200 MB of input.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from benchgen.inference.model import ModelCallError
from benchgen.inference.shapes import chat_answer, chat_request
from benchgen.providers.batch import (
    BatchAnswerError,
    BatchApi,
    BatchLimits,
    BatchStatus,
    RecordResult,
    answered,
    job_count,
    record_id,
    record_index,
)
from benchgen.vocabulary import Sampling

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
OUTPUT_FILE = "output.jsonl.out"
ERROR_FILE = "errors.jsonl.out"
# OpenAI's file ids are about 30 characters; one far longer is not an id a later request could name.
_MAX_FILE_ID = 256
_S = BatchStatus


class OpenAIBatch(BatchApi):
    title = "the OpenAI-compatible Batch API"
    limits = BatchLimits(min_records=1, max_records=50_000, max_bytes=200 * 1024 * 1024)
    statuses = MappingProxyType(
        {
            "validating": _S.RUNNING,
            "in_progress": _S.RUNNING,
            "finalizing": _S.RUNNING,
            "cancelling": _S.RUNNING,
            "completed": _S.ENDED,
            "failed": _S.FAILED,
            "expired": _S.FAILED,
            "cancelled": _S.FAILED,
        }
    )
    output_files = (OUTPUT_FILE, ERROR_FILE)
    record_id_field = "custom_id"
    no_output = "with neither an output file nor an error file"

    def record(self, index: int, model_id: str, prompt: str, sampling: Sampling) -> dict[str, Any]:
        return {
            "custom_id": record_id(index),
            "method": "POST",
            "url": ENDPOINT,
            "body": chat_request(model_id, prompt, sampling),
        }

    def results(self, line: dict[str, Any]) -> Iterator[RecordResult]:
        index = record_index(line.get("custom_id"))
        if index is None:
            return
        response = line.get("response")
        status = response.get("status_code") if isinstance(response, Mapping) else None
        body = response.get("body") if isinstance(response, Mapping) else None
        if line.get("error") or status != 200 or not isinstance(body, dict):
            yield RecordResult(index, None, f"the Batch API: {_error_text(line.get('error'), status, body)}")
            return
        try:
            answer = chat_answer(body, json.dumps(body, ensure_ascii=False))
        except ModelCallError as unreadable:
            yield RecordResult(index, None, str(unreadable))
            return
        yield answered(index, self.title, answer)


def _error_text(error: Any, status: Any, body: Any) -> str:
    if isinstance(error, Mapping):
        return f"{error.get('message')} ({error.get('code')})"
    detail = body.get("error") if isinstance(body, Mapping) else None
    message = detail.get("message") if isinstance(detail, Mapping) else None
    return f"HTTP {status}: {message}" if message else f"HTTP {status} and no answer"


BATCH = OpenAIBatch()


def create_batch_request(input_file_id: str, job_name: str) -> dict[str, Any]:
    """The ``POST /batches`` body; ``metadata.benchgen_job`` names the job, so a second submit finds it."""
    return {
        "input_file_id": input_file_id,
        "endpoint": ENDPOINT,
        "completion_window": COMPLETION_WINDOW,
        "metadata": {"benchgen_job": job_name},
    }


def batch_state(batch: Mapping[str, Any], records: int) -> tuple[str, BatchStatus, dict[str, Any]]:
    """The provider's status, ours, and the counts and files of a ``GET /batches/{id}`` answer about a
    batch of ``records`` requests; raises :class:`BatchAnswerError` for a count or file id that cannot be."""
    provider_status = str(batch.get("status", ""))
    counts = batch.get("request_counts")
    counts = counts if isinstance(counts, Mapping) else {}
    succeeded, failed = (
        job_count(counts.get(name), title=BATCH.title, field=f"request_counts.{name}", records=records)
        for name in ("completed", "failed")
    )
    errors = batch.get("errors")
    listed = errors.get("data") if isinstance(errors, Mapping) else None
    message = None
    if isinstance(listed, list) and listed and isinstance(listed[0], Mapping):
        first = listed[0]
        message = f"{first.get('message')} (line {first.get('line')}, {first.get('code')})"
    return (
        provider_status,
        BATCH.status(provider_status),
        {
            "succeeded": succeeded,
            "failed": failed,
            "message": message,
            "output_file": _file_id(batch, "output_file_id"),
            "error_file": _file_id(batch, "error_file_id"),
        },
    )


def _file_id(batch: Mapping[str, Any], field: str) -> str | None:
    value = batch.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > _MAX_FILE_ID:
        raise BatchAnswerError(
            f"{BATCH.title} answered {field} {str(value)[:60]!r}, which is not a file id (a string of at "
            f"most {_MAX_FILE_ID} characters)"
        )
    return value
