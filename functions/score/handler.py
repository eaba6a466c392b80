"""S3 ObjectCreated under predictions/: score the run and start its artifact state machine."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import adapters
from benchgen.ports.storage import UploadedObject
from benchgen.steps.attempts import Invocation
from benchgen.steps.score import score_run

function = LambdaFunction("score", counts=True)


def score_upload(upload: UploadedObject, invocation: Invocation) -> dict[str, Any]:
    wired = adapters()
    with scratch() as workdir:
        run = score_run(
            upload.key,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            starter=wired.starter,
            publisher=wired.publisher,
            workdir=workdir,
            sandbox=wired.sandbox,
            invocation=invocation,
            sharded_starter=wired.sharded_starter,
        )
    if run is None:
        return {"key": upload.key, "ignored": True}
    function.count(f"Run{run.status.value}")
    return {"run_id": run.run_id, "status": run.status.value}


handler = function.uploads(score_upload, answers="runs", invocation=True)
