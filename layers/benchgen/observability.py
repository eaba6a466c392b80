"""The tracer every handler decorates itself with: powertools' Tracer where tracing is on, else a quiet one.

Powertools' Tracer imports the X-Ray SDK (and builds its recorder) in its constructor even when it then
disables itself, which costs a cold start tens of milliseconds outside Lambda's active tracing and more
than a hundred off Lambda, where the recorder's default sampler builds a botocore client. So the choice is
made before constructing it, by powertools' own rule (`Tracer._is_tracer_disabled`: on in a Lambda
environment unless POWERTOOLS_TRACE_DISABLED says otherwise or an emulator runs it), and where tracing is
off the handler gets an object whose decorator leaves the handler as it is.

Where it traces, it records the handler and every AWS call, and nothing else. Powertools would have the
X-Ray SDK patch every library it supports; of those the layer holds botocore and the standard library's
sqlite3, whose patch would record each SQL statement as a subsegment: the scoring join and the artifact's
spools run one per batch or lookup on the per-case path. So the tracer is built without patches, and
botocore, whose patch imports its client machinery (about a quarter of a task function's import), is
patched by `trace_aws_calls` when the first client is made (`benchgen.aws.clients`): a start pays for
botocore when it makes a client, not before. The patch wraps botocore's client class, so every call a
client makes is traced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from aws_lambda_powertools.tracing.tracer import Tracer

# The library the X-Ray SDK patches to record AWS calls.
BOTOCORE = "botocore"


class HandlerTracer(Protocol):
    """What a handler uses of a tracer: its service name, and the decorator around its entry point."""

    service: str

    def capture_lambda_handler(self, lambda_handler: Callable[..., Any]) -> Callable[..., Any]: ...


class QuietTracer:
    """A tracer for where tracing is off: same service name and decorator, and nothing recorded."""

    def __init__(self, service: str) -> None:
        self.service = service

    def capture_lambda_handler(self, lambda_handler: Callable[..., Any]) -> Callable[..., Any]:
        return lambda_handler


def tracing_enabled() -> bool:
    """Whether powertools' Tracer would trace here (it reads the environment, as on every cold start)."""
    # Powertools' own rule, called rather than copied so that an upgrade cannot leave the two apart.
    return not Tracer._is_tracer_disabled()


def handler_tracer(service: str) -> HandlerTracer:
    """The function's tracer: powertools' Tracer for `service` where tracing is on, else a QuietTracer.

    It patches no library (powertools would patch every one the SDK supports): botocore is patched by
    `trace_aws_calls` when the first client is made, and sqlite3's statements are not worth a subsegment.
    """
    if not tracing_enabled():
        return QuietTracer(service)
    return Tracer(service=service, auto_patch=False)


def trace_aws_calls() -> None:
    """Where tracing is on, have the X-Ray SDK record every AWS call (called before a client is made)."""
    if tracing_enabled():
        from aws_xray_sdk.core.patcher import patch

        patch([BOTOCORE])
