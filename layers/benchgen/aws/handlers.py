"""What every function's entry point shares, so that each handler states only what is its own.

A function logs, traces and counts under its own service name (its folder, as POWERTOOLS_SERVICE_NAME
says on AWS: in-process the local cloud runs every function in one environment, so the name is given
here for its logs to say which function wrote them, and the metrics namespace with it, as a module
imported before the environment is set would otherwise count under none). Its entry point is wrapped in
powertools' decorators in one order: the logger's context outermost, then the tracer, then the metrics
flush. A state machine task parses its event into a model and logs under the id it works for (or, sent
the failure its state machine caught, records it: ``LambdaFunction.failure``); an S3 notification's
objects are handled once per object version (``for_each_upload``).
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from benchgen.aws.wiring import Adapters, adapters, for_each_upload
from benchgen.observability import handler_tracer
from benchgen.settings import METRICS_NAMESPACE
from benchgen.step_inputs import FAILED, Failure

AnswerT = TypeVar("AnswerT")
TaskT = TypeVar("TaskT", bound=BaseModel)
Entry = Callable[[dict[str, Any], LambdaContext], AnswerT]
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


@contextmanager
def scratch() -> Iterator[Path]:
    """A folder of the invocation's own, removed when the step is done with it."""
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


class LambdaFunction:
    """One function's logger, tracer and (where it counts events) metrics, and its entry point's wrapping."""

    def __init__(self, service: str, *, counts: bool = False, correlation_id_path: str | None = None) -> None:
        self.logger = Logger(service=service)
        self.tracer = handler_tracer(service)
        self.metrics = Metrics(namespace=METRICS_NAMESPACE, service=service) if counts else None
        # Where an API Gateway event carries its request id; other events are correlated by the task.
        self.correlation_id_path = correlation_id_path
        self._failure: tuple[str, Callable[[Failure, Adapters], None]] | None = None
        # Per thread: in-process, concurrent invocations of one function share this object.
        self._invocation = threading.local()

    def deadline(self) -> float:
        """When (on ``time.monotonic``'s clock) the task or upload this thread handles reaches its Lambda
        timeout."""
        deadline: float = self._invocation.deadline
        return deadline

    def count(self, name: str, value: float = 1) -> None:
        """One business event (or `value` of them), flushed with the invocation's metrics."""
        if self.metrics is None:
            raise RuntimeError(f"{self.logger.service} counts nothing: give it counts=True to count {name}")
        self.metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)

    def entry(self, handler: Entry[AnswerT]) -> Entry[AnswerT]:
        """The handler as Lambda calls it: in a fresh logger context, traced, its metrics flushed."""
        wrapped = self.tracer.capture_lambda_handler(
            handler if self.metrics is None else self.metrics.log_metrics(handler)
        )
        entry: Entry[AnswerT] = self.logger.inject_lambda_context(
            wrapped, clear_state=True, correlation_id_path=self.correlation_id_path
        )
        return entry

    def task(
        self, model: type[TaskT], *, correlation: str, keys: tuple[str, ...] = ()
    ) -> Callable[[Callable[[TaskT, Adapters], dict[str, Any]]], Handler]:
        """A state machine task's entry: the event parsed as `model`, then ``step(task, adapters)``.

        While it runs, the function's lines carry the task's `correlation` field under its own name and as
        the correlation id the other functions working for the same id log under, and the `keys` fields.
        """
        unknown = [name for name in (correlation, *keys) if name not in model.model_fields]
        if unknown:
            raise ValueError(f"{model.__name__} has no field {', '.join(unknown)} to log under")

        def decorate(step: Callable[[TaskT, Adapters], dict[str, Any]]) -> Handler:
            def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
                if self._failure is not None and FAILED in event:
                    return self._record_failure(event[FAILED], *self._failure)
                self._invocation.deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000
                task = model.model_validate(event)
                identity = getattr(task, correlation)
                # Per thread: in-process, concurrent invocations of one function share its logger.
                self.logger.thread_safe_append_keys(
                    **{correlation: identity, "correlation_id": identity},
                    **{name: getattr(task, name) for name in keys},
                )
                return step(task, adapters())

            return self.entry(handler)

        return decorate

    def failure(
        self, *, correlation: str
    ) -> Callable[[Callable[[Failure, Adapters], None]], Callable[[Failure, Adapters], None]]:
        """Register how this function records a failure its state machine caught: an event
        ``{"failed": {"id", "reason"}}`` reaches `record(failure, adapters)` instead of the task's step,
        and is answered with the failure it recorded.

        The function that writes a pipeline's record records its failure too, so that each record has one
        writer. While it runs, the lines carry the record's id as `correlation` and as the correlation id.
        """

        def register(record: Callable[[Failure, Adapters], None]) -> Callable[[Failure, Adapters], None]:
            self._failure = (correlation, record)
            return record

        return register

    def _record_failure(
        self, event: Any, correlation: str, record: Callable[[Failure, Adapters], None]
    ) -> dict[str, Any]:
        failure = Failure.model_validate(event)
        self.logger.thread_safe_append_keys(**{correlation: failure.id, "correlation_id": failure.id})
        self.logger.info("recording a failure", extra={"reason": failure.reason})
        record(failure, adapters())
        return failure.model_dump()

    def uploads(
        self, step: Callable[..., dict[str, Any]], *, answers: str, invocation: bool = False
    ) -> Handler:
        """An S3 notification's entry: ``step(upload=...)`` once per object version, answered under
        `answers`; with `invocation`, the step is also told which delivery of the event this is."""

        def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
            self._invocation.deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000
            arguments: dict[str, Any] = {}
            if invocation:
                # Imported by the functions that count deliveries only: it brings the run records.
                from benchgen.steps.attempts import Invocation

                attempts = adapters().settings.step_attempts
                arguments["invocation"] = Invocation.of(context, attempts=attempts)
            return {answers: for_each_upload(event, context, step, self.logger, **arguments)}

        return self.entry(handler)
