"""What a provider says, with the secrets BenchGen sent it taken out, before any of it is kept or shown.

A provider's words reach run records, training run timelines, execution histories, logs and API answers,
and other users read some of those. Some servers quote the request back, key included (``401 invalid API
key: Bearer sk-...``). So every answer and every failure of a provider's model or training jobs passes
:func:`redact` once, where it leaves the adapters (:func:`redacted_model`, :func:`redacted_jobs`, which the
registry applies to every kind): the connection's own key wherever it appears, and anything shaped like a
credential (a bearer token, an ``api_key=...`` pair, an OpenAI-style, AWS, GitHub or Hugging Face key, a
JWT) whoever's it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from benchgen.aws.secrets import api_key
from benchgen.errors import BenchGenError
from benchgen.inference.model import Answer, Model, ModelCallError
from benchgen.ports.providers import BatchJobs, TrainingJobs
from benchgen.providers.batch import BatchJobSpec, BatchState
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault

REDACTED = "[redacted]"
_T = TypeVar("_T")

# Shapes of credentials, whoever's they are. Each keeps what names the credential and replaces its value.
_SHAPES = [
    # A bearer token: "Bearer sk-...".
    (re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{6,}"), rf"\1\2{REDACTED}"),
    # A named value, after its scheme if it has one: api_key=..., "x-api-key": "...", Authorization: Basic
    # ..., password=..., secret: ...
    (
        re.compile(
            r"""(?ix)
            \b((?:x-)?api[_-]?key|access[_-]?key(?:[_-]?id)?|secret(?:[_-]?(?:access[_-]?)?key)?|password
               |passwd|token|access[_-]?token|refresh[_-]?token|authorization|auth)
            (["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token)\s+)?+)
            (?!\[redacted\])[^\s"',;&)}]+"""
        ),
        rf"\1\2{REDACTED}",
    ),
    # Keys recognisable by their prefix: OpenAI-style (sk-, sk-proj-...), AWS access key ids, GitHub,
    # Hugging Face, Slack; and JSON Web Tokens.
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), REDACTED),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every value of ``secrets`` (as sent, JSON-escaped or URL-encoded) and anything shaped
    like a credential replaced by ``[redacted]``."""
    for secret in secrets:
        if not secret.strip():
            continue
        for form in {secret, json.dumps(secret)[1:-1], quote(secret, safe="")}:
            text = text.replace(form, REDACTED)
    for shape, replacement in _SHAPES:
        text = shape.sub(replacement, text)
    return text


Secrets = Callable[[], tuple[str, ...]]


def connection_secrets(secret_arn: str | None, *, keep: bool) -> Secrets:
    """The values a connection's secret holds, read from Secrets Manager when asked for. With ``keep``,
    read once and kept for the life of what they redact (a model, which was given its key once); without,
    read each time (training jobs, which read their key at each call, so a rotated key is redacted too)."""
    kept: list[tuple[str, ...]] = []

    def values() -> tuple[str, ...]:
        if secret_arn is None:
            return ()
        if kept:
            return kept[0]
        try:
            value = (api_key(secret_arn),)
        except BenchGenError:
            return ()  # unreadable now: the shapes still apply, and the next call tries again
        if keep:
            kept.append(value)
        return value

    return values


class _RedactedModel:
    def __init__(self, model: Model, secrets: Secrets) -> None:
        self._model = model
        self._secrets = secrets

    def complete(self, prompt: str) -> Answer:
        try:
            answer = self._model.complete(prompt)
        except ModelCallError as error:
            raise ModelCallError(
                redact(str(error), self._secrets()),
                retryable=error.retryable,
                retry_after=error.retry_after,
                throttled=error.throttled,
            ) from None
        secrets = self._secrets()
        return replace(answer, text=redact(answer.text, secrets), raw=redact(answer.raw, secrets))


def _redacted_call(call: Callable[[], _T], secrets: Secrets) -> _T:
    try:
        return call()
    except ProviderFault as fault:
        raise ProviderFault(
            redact(str(fault), secrets()), retryable=fault.retryable, retry_after=fault.retry_after
        ) from None


class _RedactedJobs:
    def __init__(self, jobs: TrainingJobs, secrets: Secrets) -> None:
        self._jobs = jobs
        self._secrets = secrets

    def upload(self, name: str, data: bytes) -> str | None:
        return self._call(lambda: self._jobs.upload(name, data))

    def start(self, spec: JobSpec) -> JobState:
        return self._state(self._call(lambda: self._jobs.start(spec)))

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        return self._state(self._call(lambda: self._jobs.describe(spec, job_id)))

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        return self._state(self._call(lambda: self._jobs.stop(spec, job_id)))

    def _call(self, call: Callable[[], _T]) -> _T:
        return _redacted_call(call, self._secrets)

    def _state(self, state: JobState) -> JobState:
        secrets = self._secrets()
        said = {
            name: redact(value, secrets)
            for name, value in (
                ("provider_status", state.provider_status),
                ("failure_reason", state.failure_reason),
                ("message", state.message),
            )
            if value is not None
        }
        return state.model_copy(update=said)


class _RedactedBatches:
    def __init__(self, jobs: BatchJobs, secrets: Secrets) -> None:
        self._jobs = jobs
        self._secrets = secrets

    def submit(self, spec: BatchJobSpec, records: Path) -> str:
        return _redacted_call(lambda: self._jobs.submit(spec, records), self._secrets)

    def describe(self, spec: BatchJobSpec, job_id: str) -> BatchState:
        state = _redacted_call(lambda: self._jobs.describe(spec, job_id), self._secrets)
        secrets = self._secrets()
        message = redact(state.message, secrets) if state.message is not None else None
        return replace(state, provider_status=redact(state.provider_status, secrets), message=message)

    def download(self, file_id: str, path: Path) -> Path:
        """The file, each line redacted: a provider's error records may quote the request, key included."""
        raw = path.with_name(path.name + ".raw")
        _redacted_call(lambda: self._jobs.download(file_id, raw), self._secrets)
        secrets = self._secrets()
        with raw.open("rb") as lines, path.open("wb") as out:
            for line in lines:
                # Bytes that are not UTF-8 go through as they came: the assembly makes such a line its
                # record's failure, where replacement characters would pass for the model's answer.
                text = line.decode("utf-8", errors="surrogateescape")
                out.write(redact(text, secrets).encode("utf-8", errors="surrogateescape"))
        raw.unlink()
        return path


def redacted_batches(jobs: BatchJobs, secrets: Secrets) -> BatchJobs:
    """``jobs``, whose faults and job states come out with ``secrets`` and credential shapes redacted."""
    return _RedactedBatches(jobs, secrets)


def redacted_model(model: Model, secrets: Secrets) -> Model:
    """``model``, whose answers and failures come out with ``secrets`` and credential shapes redacted."""
    return _RedactedModel(model, secrets)


def redacted_jobs(jobs: TrainingJobs, secrets: Secrets) -> TrainingJobs:
    """``jobs``, whose faults and job states come out with ``secrets`` and credential shapes redacted."""
    return _RedactedJobs(jobs, secrets)
