"""Lazily created, cached boto3 clients.

Nothing is created at import: the first call makes the client, later calls reuse it, so moto (started
by a test before the first call) stays in control, and a warm Lambda keeps its connections.
Low-level clients only: unlike boto3 resources they are safe to share between threads, and the local
cloud runs handlers and state machine executions on several threads at once.
boto3 itself is imported by the first client, not with this module: importing it (and botocore's config)
is about a third of a handler's import, which every cold start would pay before its first line of work.
Where the function traces, botocore is patched for X-Ray just before the first client is made.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from botocore.config import Config

_lock = threading.Lock()
_clients: dict[str, Any] = {}


def _config(service_name: str) -> Config:
    from botocore.config import Config

    if service_name == "s3":
        # SigV4 everywhere: presigned URLs then carry X-Amz-Expires and work in every region.
        return Config(signature_version="s3v4", retries={"mode": "standard"})
    if service_name == "lambda":
        # A synchronous invocation of the sandbox lasts as long as the program (up to 15 minutes); a
        # retry after a read timeout would run the program twice.
        return Config(read_timeout=960, connect_timeout=10, retries={"total_max_attempts": 1})
    return Config(retries={"mode": "standard"})


# How long a model call may wait for its answer, whatever the provider: a long answer may take minutes to
# generate, and a self-hosted server batching requests on a CPU answers each after the whole batch.
MODEL_READ_TIMEOUT_S = 300


CONNECT_TIMEOUT_S = 10


def _model_config(timeout_s: float) -> Config:
    from botocore.config import Config

    # Model calls: the inference step retries with its own backoff and records every attempt, within its
    # deadline, so botocore makes one attempt, which never outlasts the call's own timeout by a retry.
    return Config(
        read_timeout=timeout_s,
        connect_timeout=min(CONNECT_TIMEOUT_S, timeout_s),
        retries={"total_max_attempts": 1},
    )


def _boto3() -> Any:
    """boto3, its AWS calls traced where the function traces (a client is made under the lock)."""
    import boto3

    from benchgen.observability import trace_aws_calls

    trace_aws_calls()
    return boto3


def client(service_name: str) -> Any:
    """The shared client for ``service_name`` (``"s3"``, ``"dynamodb"``, ``"events"``, ...)."""
    found = _clients.get(service_name)
    if found is not None:
        return found
    with _lock:
        # boto3's default session is not safe to use from two threads at once: create under the lock.
        found = _clients.get(service_name)
        if found is None:
            found = _boto3().client(service_name, config=_config(service_name))
            _clients[service_name] = found
        return found


def s3() -> Any:
    return client("s3")


def dynamodb() -> Any:
    return client("dynamodb")


def events() -> Any:
    return client("events")


def stepfunctions() -> Any:
    return client("stepfunctions")


def lambda_() -> Any:
    return client("lambda")


def regional(service_name: str, region: str, *, timeout_s: float = MODEL_READ_TIMEOUT_S) -> Any:
    """The shared client for ``service_name`` in ``region`` (a connection's models live in its region),
    connecting and waiting for each read for ``timeout_s`` at most (a model's runtime client: its
    connection's ``timeout_s``), with one attempt a call."""
    key = f"{service_name}@{region}@{timeout_s:g}"
    found = _clients.get(key)
    if found is not None:
        return found
    with _lock:
        found = _clients.get(key)
        if found is None:
            found = _boto3().client(service_name, region_name=region, config=_model_config(timeout_s))
            _clients[key] = found
        return found


def reset_clients() -> None:
    """Forget every cached client (tests call this when they start or stop a mock)."""
    with _lock:
        _clients.clear()
