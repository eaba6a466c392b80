"""The sandbox functions, one per runtime, seen from a function that runs programs.

A job runs in the sandbox function of its runtime. It goes to a scratch prefix that no trigger watches;
the sandbox function gets a short-lived presigned GET for it and a presigned PUT for its outputs, and
nothing else: its role grants no access to the bucket or the tables. The invocation is synchronous, so
its answer is the program's result.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchgen.aws import clients
from benchgen.aws.storage import ObjectStore

SANDBOX_PREFIX = "sandbox/"
JOB_NAME = "job.zip"
OUTPUTS_NAME = "outputs.zip"
# The outputs are uploaded when the program ends: their URL must outlive the time limit by this much.
UPLOAD_MARGIN_S = 300


class SandboxFailure(RuntimeError):
    """The sandbox function itself failed (not the program it ran): a platform fault."""


class SandboxInvoker:
    def __init__(self, store: ObjectStore, functions: Mapping[str, str], *, ttl_seconds: int) -> None:
        self.store = store
        self.functions = dict(functions)  # runtime -> the name of its sandbox function
        self.ttl_seconds = ttl_seconds

    def invoke(self, archive: Path, job: dict[str, Any], outputs: Path) -> dict[str, Any]:
        """Upload ``archive``, run ``job`` in its runtime's sandbox function, download its outputs to
        ``outputs``."""
        runtime = str(job["runtime"])
        function_name = self.functions.get(runtime)
        if function_name is None:
            raise SandboxFailure(
                f"no sandbox function runs the {runtime} runtime; the stack has: {', '.join(self.functions)}"
            )
        base = f"{SANDBOX_PREFIX}{uuid.uuid4().hex}/"
        self.store.upload(archive, base + JOB_NAME, content_type="application/zip")
        request = {
            "job_url": self.store.presigned_get_url(base + JOB_NAME, expires_in=self.ttl_seconds),
            "outputs_url": self.store.presigned_put_url(
                base + OUTPUTS_NAME, expires_in=int(job["time_limit"]) + UPLOAD_MARGIN_S
            ),
            "job": job,
        }
        response = clients.lambda_().invoke(
            FunctionName=function_name,
            InvocationType="RequestResponse",
            Payload=json.dumps(request).encode(),
        )
        answer: dict[str, Any] = json.loads(response["Payload"].read() or b"{}")
        if response.get("FunctionError"):
            raise SandboxFailure(
                f"the sandbox function {function_name} failed: "
                f"{answer.get('errorType')}: {answer.get('errorMessage')}"
            )
        self.store.download(base + OUTPUTS_NAME, outputs)
        return answer
