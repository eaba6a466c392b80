"""Who is making AWS calls in the local cloud: a function, a state machine, or the operator.

On AWS each function and each state machine calls with its own role's credentials. In-process they all
share the process's credentials and clients, so the caller is recorded here instead: the Lambda hook and
the API server mark the function whose handler runs, the Step Functions hook (``iam/enforcement.py``) the
state machine whose execution runs. It is a context variable, so the IAM enforcement can hand it on to
the threads a caller starts. Nothing marked means the operator: tests, fixtures, the command line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    """A function (by its folder, POWERTOOLS_SERVICE_NAME) or a state machine (by its ARN)."""

    function: str | None = None
    state_machine: str | None = None


_running: ContextVar[Caller | None] = ContextVar("running", default=None)


@contextmanager
def _calling_as(caller: Caller | None) -> Iterator[None]:
    token = _running.set(caller)
    try:
        yield
    finally:
        _running.reset(token)


def running_as(service: str | None) -> AbstractContextManager[None]:
    """Mark the function ``service`` (its folder, its logger's name) as running here."""
    return _calling_as(Caller(function=service) if service is not None else None)


def running_state_machine(arn: str) -> AbstractContextManager[None]:
    """Mark an execution of the state machine ``arn`` as running here."""
    return _calling_as(Caller(state_machine=arn))


def current_caller() -> Caller | None:
    return _running.get()


def running_service() -> str | None:
    """The service of the function running here; None for a state machine and outside every function."""
    caller = _running.get()
    return caller.function if caller is not None else None
