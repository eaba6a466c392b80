"""The tracer every handler decorates itself with: powertools' Tracer where tracing is on, else a quiet one.

Powertools' Tracer imports the X-Ray SDK (and builds its recorder) in its constructor even when it then
disables itself, which costs a cold start tens of milliseconds outside Lambda's active tracing and more
than a hundred off Lambda, where the recorder's default sampler builds a botocore client. So the choice is
made before constructing it, by powertools' own rule (`Tracer._is_tracer_disabled`: on in a Lambda
environment unless POWERTOOLS_TRACE_DISABLED says otherwise or an emulator runs it), and where tracing is
off the handler gets an object whose decorator leaves the handler as it is.

Where it traces, the X-Ray SDK patches the libraries it records calls of, botocore among them, which
imports botocore's client machinery: about a quarter of a task function's import. The tracer is built without
that patch and botocore is patched by `trace_aws_calls` when the first client is made
(`benchgen.aws.clients`), so a start pays for botocore when it makes a client, not before. The patch
wraps botocore's client class, so every call a client makes is traced as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from aws_lambda_powertools.tracing.tracer import Tracer

# The library the X-Ray SDK patches to record AWS calls, and those whose patch patches it too.
BOTOCORE = "botocore"
PATCHES_BOTOCORE = frozenset({BOTOCORE, "pynamodb"})


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

    Powertools would patch every library the SDK supports (its `patch_all`); this patches the same ones
    but botocore, which `trace_aws_calls` patches when the first client is made.
    """
    if not tracing_enabled():
        return QuietTracer(service)
    from aws_xray_sdk.core.patcher import NO_DOUBLE_PATCH, patch

    tracer: HandlerTracer = Tracer(service=service, auto_patch=False)
    patch([module for module in NO_DOUBLE_PATCH if module not in PATCHES_BOTOCORE], raise_errors=False)
    return tracer


def trace_aws_calls() -> None:
    """Where tracing is on, have the X-Ray SDK record every AWS call (called before a client is made)."""
    if tracing_enabled():
        from aws_xray_sdk.core.patcher import patch

        patch([BOTOCORE])
