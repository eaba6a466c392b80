"""The openai-compatible kind's adapter: fine-tuning jobs and chat completions over HTTP (urllib only).

The API key is asked for before each request (``api_key``), so it is read from Secrets Manager when the
call is made; it goes into the Authorization header and nowhere else: no message or log line carries it.
A job's reads and cancels are retried with backoff; an upload or a create only after a 429 (the provider
refused it unread), since one that timed out may have been done: the next start finds such a job by its
suffix.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from email.message import Message
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

from benchgen.aws.clients import MODEL_READ_TIMEOUT_S
from benchgen.aws.providers.faults import missing
from benchgen.aws.secrets import api_key
from benchgen.inference.model import Answer, Model, ModelCallError
from benchgen.inference.retry import Backoff
from benchgen.inference.shapes import chat_answer, chat_request, parse_json
from benchgen.ports.providers import BatchJobs, TrainingJobs
from benchgen.providers import openai_batch, openai_compatible
from benchgen.providers.batch import BatchJobSpec, BatchState
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.records.runs import LiveModel
from benchgen.vocabulary import Sampling

T = TypeVar("T")

_ERROR_PREVIEW = 300


def retry_after_seconds(headers: Message | None) -> float | None:
    """The wait an HTTP answer's Retry-After header asks for, in seconds, when it gives a number."""
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def cut_short(url: str, error: http.client.IncompleteRead) -> str:
    """The sentence for an answer whose connection closed before the body its headers promised."""
    read = len(error.partial)
    of = f" of {read + error.expected}" if isinstance(error.expected, int) else ""
    closed = "the connection closed before the answer ended"
    return f"{url} cut its answer short ({read} bytes{of} read): {closed}"


class ChatCompletions:
    """``POST {base_url}/chat/completions`` for one model id and sampling."""

    def __init__(
        self,
        base_url: str,
        model_id: str,
        sampling: Sampling,
        *,
        api_key: str | None = None,
        timeout_s: float = MODEL_READ_TIMEOUT_S,
    ) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model_id = model_id
        self._sampling = sampling
        self._api_key = api_key
        self._timeout_s = timeout_s

    def complete(self, prompt: str) -> Answer:
        body = json.dumps(chat_request(self._model_id, prompt, self._sampling)).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        status, response_headers, raw = self._post(body, headers)
        if status >= 400:
            detail = raw[:_ERROR_PREVIEW]
            throttled = status == 429
            what = "throttled the request" if throttled else f"answered HTTP {status}"
            raise ModelCallError(
                f"{self._url} {what}: {detail}",
                retryable=status >= 500,
                retry_after=retry_after_seconds(response_headers),
                throttled=throttled,
            )
        return chat_answer(parse_json(raw, self._url, ": check the base URL"), raw)

    def _post(self, body: bytes, headers: dict[str, str]) -> tuple[int, Message, str]:
        """The status, headers and body of one POST, the whole of it within ``timeout_s``.

        A socket's timeout bounds each read only: a server that sends a byte now and then would hold the
        call for ever. So a watchdog shuts the socket at the deadline, which ends any read under way.
        """
        # The base URL was checked to be https (or loopback) when the connection was recorded.
        parts = urlsplit(self._url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.netloc, timeout=self._timeout_s)
        deadline = time.monotonic() + self._timeout_s
        watchdog: threading.Timer | None = None
        try:
            connection.connect()
            # The socket itself: the connection lets go of it once an answer that closes it has begun.
            watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), _shut, (connection.sock,))
            watchdog.daemon = True
            watchdog.start()
            connection.request("POST", parts.path, body=body, headers=headers)
            response = connection.getresponse()
            raw = response.read().decode("utf-8", errors="replace")
        except http.client.IncompleteRead as error:
            if time.monotonic() >= deadline:
                raise self._late() from None
            # The connection closed mid-answer: a network fault, which the same call may not meet again.
            raise ModelCallError(cut_short(self._url, error), retryable=True) from None
        except (OSError, http.client.HTTPException) as error:
            if time.monotonic() >= deadline:
                raise self._late() from None
            raise ModelCallError(f"could not reach {self._url}: {error}", retryable=True) from None
        finally:
            if watchdog is not None:
                watchdog.cancel()
            connection.close()
        return response.status, response.headers, raw

    def _late(self) -> ModelCallError:
        return ModelCallError(
            f"{self._url} gave no whole answer within {self._timeout_s:g} s, the connection's timeout_s",
            retryable=True,
        )


def _shut(sock: socket.socket) -> None:
    """End the socket's reads and writes at once, from the watchdog's thread."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


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
        body = openai_compatible.upload_body(boundary, name, data)
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
            return openai_compatible.job_state(existing)
        body = json.dumps(openai_compatible.fine_tune_request(spec)).encode()
        job = self._retried(
            lambda: self._request("POST", "/fine-tunes", body, what=f"starting {spec.job_name}"),
            only_throttling=True,
        )
        return openai_compatible.job_state(job)

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        job_id = job_id or self._job_id(spec)
        return openai_compatible.job_state(
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
        state = self._retried(lambda: self._request("POST", path, b"{}", what=f"cancelling {job_id}"))
        return openai_compatible.job_state(state)

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
        except http.client.IncompleteRead as error:
            raise ProviderFault(f"{cut_short(self._base, error)}, when {what}", retryable=True) from None
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, a number past Python's digit limit
            answer = None
        if not isinstance(answer, dict):
            raise ProviderFault(
                f"{url} answered something other than a JSON object when {what}: check the base URL",
                retryable=False,
            )
        return answer


class OpenAIBatchJobs:
    """Batch API jobs on one OpenAI-compatible base URL, through the same requests as its fine-tunes."""

    def __init__(self, http: OpenAICompatibleJobs) -> None:
        self._http = http

    def submit(self, spec: BatchJobSpec, records: Path) -> str:
        existing = self._find(spec.name)
        if existing is not None:
            return existing
        http = self._http
        # A job's records go to the provider whole: at most the 200 MB its Batch API takes in one file.
        boundary = f"benchgen-{uuid.uuid4().hex}"
        body = openai_compatible.upload_body(
            boundary, f"{spec.name}.jsonl", records.read_bytes(), purpose="batch"
        )
        content_type = f"multipart/form-data; boundary={boundary}"
        uploaded = http._retried(
            lambda: http._request("POST", "/files", body, content_type, what=f"uploading {spec.name}"),
            only_throttling=True,
        )
        file_id = uploaded.get("id")
        if not isinstance(file_id, str) or not file_id:
            raise ProviderFault(f"{http._base}/files answered no file id for {spec.name}", retryable=False)
        request = json.dumps(openai_batch.create_batch_request(file_id, spec.name)).encode()
        batch = http._retried(
            lambda: http._request("POST", "/batches", request, what=f"creating batch {spec.name}"),
            only_throttling=True,
        )
        batch_id = batch.get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise ProviderFault(f"{http._base}/batches answered no batch id for {spec.name}", retryable=False)
        return batch_id

    def describe(self, spec: BatchJobSpec, job_id: str) -> BatchState:
        http = self._http
        path = f"/batches/{quote(job_id, safe='')}"
        batch = http._retried(lambda: http._request("GET", path, what=f"reading batch {spec.name}"))
        provider_status, status, details = openai_batch.batch_state(batch, spec.records)
        return BatchState(provider_status=provider_status, status=status, **details)

    def download(self, file_id: str, path: Path) -> Path:
        http = self._http
        url = f"{http._base}/files/{quote(file_id, safe='')}/content"
        headers = {}
        key = http._api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # The base URL was checked to be https (or loopback) when the connection was recorded.
        request = urllib.request.Request(url, headers=headers, method="GET")  # noqa: S310
        try:
            with (
                urllib.request.urlopen(request, timeout=http._timeout_s) as answer,  # noqa: S310
                path.open("wb") as out,
            ):
                shutil.copyfileobj(answer, out)
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", errors="replace")[:_ERROR_PREVIEW]
            raise ProviderFault(
                f"{http._base} answered HTTP {error.code} when fetching {file_id}: {detail}",
                retryable=error.code >= 500 or error.code == 429,
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise ProviderFault(
                f"could not reach {http._base} when fetching {file_id}: {reason}", retryable=True
            ) from None
        return path

    def _find(self, job_name: str) -> str | None:
        """The batch a submit of ``job_name`` made before (its step retried), found by its metadata."""
        http = self._http
        listed = http._retried(lambda: http._request("GET", "/batches?limit=100", what="listing batches"))
        batches = listed.get("data")
        for batch in batches if isinstance(batches, list) else []:
            metadata = batch.get("metadata") if isinstance(batch, dict) else None
            if isinstance(metadata, dict) and metadata.get("benchgen_job") == job_name:
                return str(batch["id"])
        return None


class Adapter:
    def batch_jobs(self, live: LiveModel) -> BatchJobs:
        if live.base_url is None:
            raise ProviderFault(missing(live.connection_id, live.provider, "a base URL"), retryable=False)
        secret_arn = live.secret_arn
        return OpenAIBatchJobs(
            OpenAICompatibleJobs(
                live.base_url, api_key=(lambda: _read_key(secret_arn)) if secret_arn else lambda: None
            )
        )

    def training_jobs(self, connection: ConnectionRecord) -> TrainingJobs:
        if connection.base_url is None:
            raise ProviderFault(
                missing(connection.connection_id, connection.provider, "a base URL"), retryable=False
            )
        secret_arn = connection.secret_arn
        return OpenAICompatibleJobs(
            connection.base_url, api_key=(lambda: _read_key(secret_arn)) if secret_arn else lambda: None
        )

    def model(self, live: LiveModel, sampling: Sampling) -> Model:
        if live.base_url is None:
            raise ModelCallError(missing(live.connection_id, live.provider, "a base URL"), retryable=False)
        key = api_key(live.secret_arn) if live.secret_arn else None
        return ChatCompletions(live.base_url, live.model_id, sampling, api_key=key, timeout_s=live.timeout_s)


def _read_key(secret_arn: str) -> str:
    """The connection's API key, read from Secrets Manager at the moment of each job call."""
    try:
        return api_key(secret_arn)
    except ModelCallError as error:
        raise ProviderFault(str(error), retryable=error.retryable) from None


ADAPTER = Adapter()
