"""Synchronous invocation from ingest or score: run one untrusted program, answer its result.

The role of this function grants nothing: the job and its outputs travel through presigned URLs.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from benchgen.sandbox.remote import SandboxRequest, contain_strays, empty_folder, serve

# On Lambda (and only there: elsewhere /tmp is the machine's and other handlers share this process) all of
# /tmp is this function's scratch and every process below it is this invocation's: both outlive the
# invocation in a warm sandbox, so /tmp is emptied and stray processes are killed around each program.
LAMBDA_TMP = Path("/tmp")  # noqa: S108 - the sandbox's own scratch, emptied on purpose


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = SandboxRequest.model_validate(event)
    on_lambda = "AWS_LAMBDA_RUNTIME_API" in os.environ
    if on_lambda:
        contain_strays()
        empty_folder(LAMBDA_TMP)
    try:
        with tempfile.TemporaryDirectory(prefix="job-") as scratch:
            result = serve(request, Path(scratch))
    finally:
        if on_lambda:
            contain_strays()
            empty_folder(LAMBDA_TMP)
    # The whole result (output tails included) went up with the outputs; the answer only summarises it.
    return result.model_dump(
        mode="json", include={"returncode", "timed_out", "duration_s", "stray_processes"}
    )
