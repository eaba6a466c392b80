"""S3 ObjectCreated of a batch job's manifest under batch-output/: once every job of the live run has its
output, write the run's answers and upload its generated submission (which starts ingest)."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import adapters
from benchgen.ports.storage import UploadedObject
from benchgen.steps.attempts import Invocation
from benchgen.steps.batch_inference import assemble_batch

function = LambdaFunction("assemble_batch", counts=True)


def assemble(upload: UploadedObject, invocation: Invocation) -> dict[str, Any]:
    wired = adapters()
    with scratch() as workdir:
        answer = assemble_batch(
            upload.key, runs=wired.runs, store=wired.store, workdir=workdir, invocation=invocation
        )
    if "unanswered" in answer:
        function.count("CasesUnanswered", answer["unanswered"])
    return answer


handler = function.uploads(assemble, answers="batches", invocation=True)
