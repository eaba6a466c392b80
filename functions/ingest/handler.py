"""S3 ObjectCreated under submissions/: turn the submission into the run's prediction output."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import adapters
from benchgen.ports.storage import UploadedObject
from benchgen.records.runs import RunStatus
from benchgen.steps.attempts import Invocation
from benchgen.steps.ingest import ingest_submission

function = LambdaFunction("ingest", counts=True)


def ingest(upload: UploadedObject, invocation: Invocation) -> dict[str, Any]:
    wired = adapters()
    with scratch() as workdir:
        run = ingest_submission(
            upload.key,
            store=wired.store,
            runs=wired.runs,
            environments=wired.environments,
            workdir=workdir,
            sandbox=wired.sandbox,
            invocation=invocation,
            publisher=wired.publisher,
        )
    if run is None:
        return {"key": upload.key, "ignored": True}
    # A refused submission ends the run here: it counts with the score step's failures, as RunFailed.
    function.count("RunFailed" if run.status is RunStatus.FAILED else "SubmissionIngested")
    return {"run_id": run.run_id, "status": run.status.value}


handler = function.uploads(ingest, answers="runs", invocation=True)
