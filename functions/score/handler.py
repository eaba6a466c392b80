"""S3 ObjectCreated under predictions/: score the run and start its artifact state machine. Also the
JudgingPipeline's last task, ``{"run_id"}``: score a run whose judgments are now written."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import adapters
from benchgen.bucket_layout import prediction_key
from benchgen.ports.storage import UploadedObject
from benchgen.step_inputs import RunInput
from benchgen.steps.attempts import Invocation
from benchgen.steps.score import score_run

function = LambdaFunction("score", counts=True)


def _score(key: str, invocation: Invocation) -> dict[str, Any]:
    wired = adapters()
    with scratch() as workdir:
        run = score_run(
            key,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            starter=wired.starter,
            publisher=wired.publisher,
            workdir=workdir,
            sandbox=wired.sandbox,
            invocation=invocation,
            sharded_starter=wired.sharded_starter,
            judging_starter=wired.judging_starter,
        )
    if run is None:
        return {"key": key, "ignored": True}
    function.count(f"Run{run.status.value}")
    return {"run_id": run.run_id, "status": run.status.value}


def score_upload(upload: UploadedObject, invocation: Invocation) -> dict[str, Any]:
    return _score(upload.key, invocation)


def _score_judged(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Retried by its state machine, as an S3 event is by Lambda: the same attempts on the run's claim.
    invocation = Invocation.of(context, attempts=adapters().settings.step_attempts)
    return _score(prediction_key(RunInput.model_validate(event).run_id), invocation)


_uploads = function.uploads(score_upload, answers="runs", invocation=True)
_judged = function.entry(_score_judged)


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return _uploads(event, context) if "Records" in event else _judged(event, context)
