"""One invocation's turn at a run step: claimed first, so that concurrent deliveries do the work once,
and ended Failed when the last delivery Lambda makes of an event fails unexpectedly, so that no run
stays Running.

Lambda delivers an asynchronous event up to ``Invocation.attempts`` times while the function fails. An
error a user can act on (a ``BenchGenError``) fails the run at once; any other error is retried, and the
attempt that knows it is the last one (the claim counts them) records an internal error instead.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.ports.events import Publisher
from benchgen.ports.runs import RunsStore
from benchgen.records.runs import RunRecord, RunStatus

logger = Logger(child=True)

_DOING = {
    "ingest": "reading the submission",
    "score": "scoring the predictions",
    "assemble_batch": "assembling the answers of the run's batch jobs",
}
# How long before its deadline the last attempt records that it ran out of time: a DynamoDB write's worth.
TIMEOUT_MARGIN_S = 10.0


@dataclass(frozen=True)
class Invocation:
    """Who is working (a fresh holder per invocation), until when, and how many deliveries an event gets."""

    request_id: str
    deadline: float  # epoch seconds at which Lambda stops this invocation
    attempts: int
    holder: str = field(default_factory=lambda: uuid.uuid4().hex)

    @classmethod
    def of(cls, context: LambdaContext, *, attempts: int) -> Invocation:
        remaining = context.get_remaining_time_in_millis() / 1000
        return cls(request_id=context.aws_request_id, deadline=time.time() + remaining, attempts=attempts)


def claim_run(runs: RunsStore, run: RunRecord, *, step: str, invocation: Invocation) -> int | None:
    """The attempt number when this invocation now holds the Running ``run`` (as the step has it) for
    ``step``; None if another does.

    The claim lapses at the invocation's deadline, so a holder that died does not block the retry.
    """
    return runs.claim(
        run,
        step=step,
        holder=invocation.holder,
        request_id=invocation.request_id,
        expires_at=invocation.deadline,
        now=time.time(),
        status=RunStatus.RUNNING,
    )


def internal_error_reason(step: str, error: BaseException, invocation: Invocation, attempt: int) -> str:
    # The error's own text stays in the logs: it may quote internals the user has no use for.
    return (
        f"internal error while {_DOING[step]} ({type(error).__name__}, attempt {attempt} of "
        f"{invocation.attempts}, request id {invocation.request_id}); nothing you uploaded was changed: "
        "upload the submission again, and quote the request id if this happens again"
    )


def fail_if_last_attempt(
    runs: RunsStore, run_id: str, *, step: str, attempt: int, invocation: Invocation, error: Exception
) -> bool:
    """After an unexpected error: ``True`` when this was the last attempt, and the Running run is now Failed.

    ``False`` means the caller re-raises (and lets its claim go), so that Lambda delivers the event again.
    """
    logger.exception(
        "unexpected error in a run step",
        extra={"run_id": run_id, "step": step, "attempt": attempt, "attempts": invocation.attempts},
    )
    if attempt < invocation.attempts:
        return False
    runs.fail(run_id, internal_error_reason(step, error, invocation, attempt))
    return True


@contextmanager
def out_of_time_guard(
    runs: RunsStore,
    run_id: str,
    *,
    step: str,
    attempt: int,
    invocation: Invocation,
    publisher: Publisher | None = None,
) -> Iterator[None]:
    """On the last attempt, fail the run just before Lambda stops the invocation (and, given a
    ``publisher``, announce RunFailed as the step's other failures do).

    A timeout raises nothing the step could catch: Lambda ends the process. Earlier attempts are left to
    time out, since Lambda delivers the event again.
    """
    if attempt < invocation.attempts:
        yield
        return

    def fail() -> None:
        logger.error("the last attempt is running out of time", extra={"run_id": run_id, "step": step})
        reason = internal_error_reason(step, TimeoutError(), invocation, attempt)
        failed = runs.fail(run_id, reason)
        if failed and publisher is not None:
            publisher.publish("RunFailed", {"run_id": run_id, "reason": reason})

    timer = threading.Timer(max(0.0, invocation.deadline - TIMEOUT_MARGIN_S - time.time()), fail)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def take_turn(
    runs: RunsStore,
    run: RunRecord,
    *,
    step: str,
    invocation: Invocation,
    work: Callable[[], RunRecord | None],
    publisher: Publisher | None = None,
) -> RunRecord | None:
    """Do ``work`` on the Running ``run`` (as the step read or wrote it) as this invocation's turn at
    ``step``; None if another holds it.

    The run is claimed first and let go after. An unexpected error is raised again for Lambda to retry,
    except on the last attempt, which fails the run (announced as RunFailed, given a ``publisher``); the
    last attempt also fails it just before Lambda's deadline. ``work`` answers errors a user can act on.
    """
    run_id = run.run_id
    attempt = claim_run(runs, run, step=step, invocation=invocation)
    if attempt is None:
        logger.info("another invocation holds this run", extra={"run_id": run_id, "step": step})
        return None
    try:
        with out_of_time_guard(
            runs, run_id, step=step, attempt=attempt, invocation=invocation, publisher=publisher
        ):
            return work()
    except Exception as error:
        if not fail_if_last_attempt(
            runs, run_id, step=step, attempt=attempt, invocation=invocation, error=error
        ):
            raise
        # Read again: whether the last attempt failed the run or it finished meanwhile, its state now.
        failed = runs.get(run_id)
        if publisher is not None and failed is not None and failed.status is RunStatus.FAILED:
            publisher.publish("RunFailed", {"run_id": run_id, "reason": failed.failure_reason})
        return failed
    finally:
        runs.release_claim(run_id, holder=invocation.holder)
