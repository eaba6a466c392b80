"""Training jobs on an OpenAI-compatible service, through Together's fine-tuning API (urllib only).

``POST {base}/files`` (multipart, purpose ``fine-tune``) uploads a training file and answers its id;
``POST {base}/fine-tunes`` starts a job on file ids, ``GET {base}/fine-tunes[/{id}]`` lists or reads jobs,
``POST {base}/fine-tunes/{id}/cancel`` stops one. The job's ``suffix`` is its fixed job name, so a start
first looks for a job with that suffix and makes a new one only when there is none.

The API key is asked for (``api_key``) before each request, so it is read from Secrets Manager when the
call is made; it goes into the Authorization header and nowhere else: no message or log line carries it.
Reads and cancels are retried with backoff; an upload or a create only after a 429 (the provider refused
it unread), since one that timed out may have been done: the next start finds such a job by its suffix.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

from benchgen.inference.openai_http import retry_after_seconds
from benchgen.inference.retry import Backoff
from benchgen.providers.jobs import (
    JobSpec,
    JobState,
    ProviderFault,
    map_status,
    status_note,
    typed_hyperparameters,
)
from benchgen.providers.profiles import ProviderKind
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method

T = TypeVar("T")
_KIND = ProviderKind.OPENAI_COMPATIBLE
_ERROR_PREVIEW = 300
_METHODS = {Method.DEMONSTRATION: "sft", Method.PREFERENCE: "dpo"}
# What a job reports as its trained model, and as its cost, across Together-style and OpenAI-style APIs.
_RESULT_FIELDS = ("fine_tuned_model", "model_output_name", "output_name")
_COST_FIELDS = ("total_price", "trained_tokens", "token_count")


def fine_tune_request(spec: JobSpec) -> dict[str, Any]:
    """The ``POST /fine-tunes`` body of ``spec``: its files, base model, suffix and training fields."""
    fields = typed_hyperparameters(_KIND, spec.base_model, spec.hyperparameters)
    method: dict[str, Any] = {"method": _METHODS[spec.method]}
    beta = fields.pop("dpo_beta", None)
    if beta is not None:
        if spec.method is not Method.PREFERENCE:
            raise ProviderFault(
                "dpo_beta applies to preference (DPO) training only: leave it out of demonstration training",
                retryable=False,
            )
        method["dpo_beta"] = beta
    body: dict[str, Any] = {
        "training_file": spec.train_uri,
        "model": spec.base_model,
        "suffix": spec.job_name,
        "training_method": method,
        **fields,
    }
    if spec.validation_uri:
        body["validation_file"] = spec.validation_uri
    return body


class _Throttled(ProviderFault):
    """A 429: the provider refused the request without acting on it, so sending it again is safe."""


class OpenAICompatibleJobs:
    """Fine-tuning jobs on one OpenAI-compatible base URL."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: Callable[[], str | None],
        backoff: Backoff | None = None,
        sleep: Callable[[float], None] = time.sleep,
        timeout_s: float = 60.0,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._api_key = api_key
        self._backoff = backoff or Backoff()
        self._sleep = sleep
        self._timeout_s = timeout_s

    # the TrainingJobs protocol

    def upload(self, name: str, data: bytes) -> str | None:
        boundary = f"benchgen-{uuid.uuid4().hex}"
        body = _multipart(boundary, {"purpose": "fine-tune"}, ("file", name, data))
        content_type = f"multipart/form-data; boundary={boundary}"
        answer = self._retried(
            lambda: self._request("POST", "/files", body, content_type, what=f"uploading {name}"),
            only_throttling=True,
        )
        file_id = answer.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise ProviderFault(f"{self._base}/files answered no file id for {name}", retryable=False)
        return file_id

    def start(self, spec: JobSpec) -> JobState:
        existing = self._find(spec.job_name)
        if existing is not None:
            return _state(existing)
        body = json.dumps(fine_tune_request(spec)).encode()
        job = self._retried(
            lambda: self._request("POST", "/fine-tunes", body, what=f"starting {spec.job_name}"),
            only_throttling=True,
        )
        return _state(job)

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        job_id = job_id or self._job_id(spec)
        return _state(
            self._retried(
                lambda: self._request(
                    "GET", f"/fine-tunes/{quote(job_id, safe='')}", what=f"reading {job_id}"
                )
            )
        )

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        job_id = job_id or self._job_id(spec)
        # Cancelling twice is harmless, so a cancel is retried like a read.
        path = f"/fine-tunes/{quote(job_id, safe='')}/cancel"
        return _state(self._retried(lambda: self._request("POST", path, b"{}", what=f"cancelling {job_id}")))

    # finding a job by its suffix

    def _find(self, job_name: str) -> dict[str, Any] | None:
        listed = self._retried(lambda: self._request("GET", "/fine-tunes", what="listing fine-tunes"))
        jobs = listed.get("data")
        for job in jobs if isinstance(jobs, list) else []:
            if isinstance(job, dict) and job.get("suffix") == job_name:
                return job
        return None

    def _job_id(self, spec: JobSpec) -> str:
        job = self._find(spec.job_name)
        if job is None or not isinstance(job.get("id"), str):
            raise ProviderFault(
                f"{self._base} has no fine-tune job with suffix {spec.job_name}: its start never reached "
                "the provider; start the job again",
                retryable=False,
            )
        return str(job["id"])

    # HTTP

    def _retried(self, call: Callable[[], T], *, only_throttling: bool = False) -> T:
        """``call`` until it answers, fails for good, or uses up the backoff's attempts."""
        for attempt in range(1, self._backoff.attempts + 1):
            try:
                return call()
            except ProviderFault as fault:
                safe = fault.retryable and (isinstance(fault, _Throttled) or not only_throttling)
                if not safe or attempt == self._backoff.attempts:
                    raise
                self._sleep(self._backoff.delay(attempt - 1, fault.retry_after))
        raise AssertionError("unreachable: the loop returns or raises on its last attempt")

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        *,
        what: str,
    ) -> dict[str, Any]:
        url = self._base + path
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        key = self._api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # The base URL was checked to be https (or loopback) when the connection was recorded.
        request = urllib.request.Request(url, data=body, headers=headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:  # noqa: S310
                raw = response.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", errors="replace")[:_ERROR_PREVIEW]
            if error.code == 429:
                raise _Throttled(
                    f"{self._base} throttled the request when {what}: {detail}",
                    retryable=True,
                    retry_after=retry_after_seconds(error.headers),
                ) from None
            raise ProviderFault(
                f"{self._base} answered HTTP {error.code} when {what}: {detail}", retryable=error.code >= 500
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise ProviderFault(
                f"could not reach {self._base} when {what}: {reason}", retryable=True
            ) from None
        try:
            answer = json.loads(raw)
        except json.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            raise ProviderFault(
                f"{url} answered something other than a JSON object when {what}: check the base URL",
                retryable=False,
            )
        return answer


def _state(job: Mapping[str, Any]) -> JobState:
    provider_status = str(job.get("status", ""))
    status = map_status(_KIND, provider_status)
    result = next(
        (job[name] for name in _RESULT_FIELDS if isinstance(job.get(name), str) and job[name]), None
    )
    cost: dict[str, float | str] = {
        name: float(job[name])
        for name in _COST_FIELDS
        if isinstance(job.get(name), int | float) and not isinstance(job.get(name), bool)
    }
    return JobState(
        provider_status=provider_status,
        status=status,
        job_id=str(job["id"]) if job.get("id") is not None else None,
        result_model=result if status is TrainingStatus.SUCCEEDED else None,
        failure_reason=_failure(job) if status is TrainingStatus.FAILED else None,
        cost=cost,
        message=status_note(_KIND, provider_status),
    )


def _failure(job: Mapping[str, Any]) -> str | None:
    """The provider's own words on why a job failed (OpenAI nests them under ``error``)."""
    error = job.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    for name in ("error", "message", "failure_reason"):
        if isinstance(job.get(name), str) and job[name]:
            return str(job[name])
    return None


def _multipart(boundary: str, fields: Mapping[str, str], file: tuple[str, str, bytes]) -> bytes:
    """A multipart/form-data body of ``fields`` and one file (field name, file name, bytes)."""
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    field, filename, data = file
    safe_name = filename.replace('"', "").replace("\r", "").replace("\n", "")
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{safe_name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts)
