"""An upload whose event failed every delivery: end what it was for, with a reason a user can read.

Lambda sends an asynchronous event to the function's dead-letter queue after its last retry fails. Most
such failures are already recorded by the step itself (its last attempt fails the run); the ones it could
not record are those where its code never got to: the process killed out of memory, the runtime crashed,
or a retry blocked by the dead attempt's claim until the deadline. For those, the run is still unfinished
or the bundle has no environment version, and this is where they end.

Each message is the original S3 notification; Lambda adds RequestID, ErrorCode (the invocation's HTTP
status: 200 for an error of the function) and ErrorMessage (the first 1 KB of the last attempt's error).
A message this settles is deleted (Lambda's poller deletes what the batch did not report failed): the
upload itself stays in the versioned bucket, the run or version keeps the reason and request id, and the
log keeps the message; keeping it would only have it delivered again and again. Every write is
conditional, so a message handled twice, or one for a run that has since finished, changes nothing; a
run that another event's delivery holds (its claim live, under another request id), or takes between
this read and this write, is left to that one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from benchgen.bucket_layout import (
    ENVIRONMENTS,
    PREDICTIONS,
    SUBMISSIONS,
    ObjectKeyError,
    bundle_slot,
    loose_run_id,
    parse_prediction_key,
)
from benchgen.ports.environments import EnvironmentsStore
from benchgen.ports.events import Publisher
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import UploadedObject
from benchgen.records.runs import RunStatus
from benchgen.steps.register import reject_version

logger = Logger(child=True)

UNFINISHED = (RunStatus.PENDING, RunStatus.DEPLOYING, RunStatus.RUNNING)
# How many times a run that changes hands between the read and the write is read again.
CLAIM_READS = 3


@dataclass(frozen=True)
class DeadLetter:
    """One message of a dead-letter queue: the uploads its event announced, and what Lambda said about
    its last failure."""

    uploads: tuple[UploadedObject, ...]
    request_id: str
    error_code: str
    error_message: str


# Lambda's error message stays in the log, not in the reason: it is the last attempt's, which after a
# killed first attempt is the idempotency layer's "already in progress" naming internal keys, and in
# general may quote internals the user has no use for (as the steps' own internal-error reasons do).
def run_failure_reason(step: str, letter: DeadLetter) -> str:
    return (
        f"internal error: the {step} step failed on every attempt (request id {letter.request_id}), "
        "stopped before it could say why (out of memory, out of time or a crash); nothing you uploaded "
        "was changed: upload the submission again, and quote the request id if this happens again"
    )


def bundle_rejection_reason(letter: DeadLetter) -> str:
    return (
        f"internal error: registering the bundle failed on every attempt (request id {letter.request_id}); "
        "the bundle is kept in the bucket: upload it again as a new version, and quote the request id if "
        "this happens again"
    )


def settle_dead_letter(
    letter: DeadLetter, *, runs: RunsStore, environments: EnvironmentsStore, publisher: Publisher
) -> list[str]:
    """End the run or environment version each upload of the event was for; say what was done for each."""
    logger.error(
        "an event failed every delivery",
        extra={
            "request_id": letter.request_id,
            "error_code": letter.error_code,
            "error_message": letter.error_message,
        },
    )
    done = []
    for upload in letter.uploads:
        key = upload.key
        if key.startswith(ENVIRONMENTS):
            done.append(_reject_bundle(key, upload.version_id, letter, environments))
            continue
        step, run_id = _run_step(key)
        if run_id is None:
            logger.error("dead letter for an object that belongs to no run", extra={"key": key})
            done.append(f"{key}: no run")
            continue
        done.append(_fail_run(run_id, step, letter, runs, publisher))
    return done


def _run_step(key: str) -> tuple[str, str | None]:
    if key.startswith(SUBMISSIONS):
        return "ingest", loose_run_id(key)
    if key.startswith(PREDICTIONS):
        try:
            return "score", parse_prediction_key(key)
        except ObjectKeyError:
            return "score", None
    return "unknown", None


def _fail_run(run_id: str, step: str, letter: DeadLetter, runs: RunsStore, publisher: Publisher) -> str:
    reason = run_failure_reason(step, letter)
    for _ in range(CLAIM_READS):
        run = runs.get(run_id)
        if run is None or run.status not in UNFINISHED:
            # A run the step finished (or failed itself, on its last attempt) is left as it is.
            logger.info("dead letter for a run that has finished: left alone", extra={"run_id": run_id})
            return f"{run_id}: already finished"
        claim = run.claim
        # Another event's delivery at work on the run (a duplicate that took over, a re-upload, the next
        # step) carries it to its end; only the dead event's own claim, left live by its killed attempt,
        # is no sign of life.
        if claim is not None and claim.expires_at > time.time() and claim.request_id != letter.request_id:
            logger.info(
                "dead letter for a run another delivery is at work on: left alone",
                extra={"run_id": run_id, "step": claim.step, "holder_request_id": claim.request_id},
            )
            return f"{run_id}: at work in request {claim.request_id}"
        # Failed only if nobody took the run between the read and the write: a delivery that claims it
        # meanwhile changes the holder, and the run is read again.
        holder = claim.holder if claim is not None else None
        if runs.fail(run_id, reason, expected=UNFINISHED, holder=holder) is not None:
            logger.error(
                "run failed after every delivery of its event", extra={"run_id": run_id, "step": step}
            )
            publisher.publish("RunFailed", {"run_id": run_id, "reason": reason})
            return f"{run_id}: failed"
    # Taken again on every read: deliveries are at work on it, and carry it to its end.
    logger.info("dead letter for a run that keeps changing hands: left alone", extra={"run_id": run_id})
    return f"{run_id}: changing hands"


def _reject_bundle(
    key: str, version_id: str | None, letter: DeadLetter, environments: EnvironmentsStore
) -> str:
    slot = bundle_slot(key)
    # A version that registration recorded stands, whatever happened after.
    _, written = reject_version(slot, key, version_id, bundle_rejection_reason(letter), environments)
    if not written:
        logger.info(
            "dead letter for a recorded environment version: left alone", extra={"version": slot.label}
        )
        return f"{slot.label}: already recorded"
    logger.error("bundle rejected after every delivery of its event", extra={"version": slot.label})
    return f"{slot.label}: rejected"
