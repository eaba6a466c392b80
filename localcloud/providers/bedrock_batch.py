"""SIMULATED Bedrock batch inference: model invocation jobs, which moto 5.2.5 lacks, answered by the local
example model server (as is Converse, which moto lacks too, so that a Bedrock live run's reachability
check and its on-demand cases answer).

While the provider clock is installed, ``CreateModelInvocationJob`` and ``GetModelInvocationJob`` answer
on moto's Bedrock. A job moves one status per read (``Submitted``, ``Validating``, ``Scheduled``,
``InProgress``); on the read after, its records, read from moto's S3, are each asked of the example
server (:meth:`ModelInvocationJobs.serve`), and the output is written to moto's S3 as Bedrock writes it,
``<output>/<job id>/<input file>.out`` and then ``manifest.json.out``, so the S3 events fire, while the
job still reads ``InProgress``: only the read after that says it ended, so whoever polls hears of the end
after the output's event (as can happen on AWS, where the two are not ordered).
A record the server refuses (a fault injected for its case) is an ``error`` record, and the job ends
``PartiallyCompleted``.

It is stricter than Bedrock where that is cheap: unknown request fields, the documented record limits
(lowered for tests through the knobs), records that are not exactly ``{"recordId", "modelInput"}`` with
an 11-character alphanumeric id, and a Converse input with fields Converse does not take all fail the job
at validation, as Bedrock does, with the line that broke it. A test can also fail every job
(:meth:`ModelInvocationJobs.fail`), keep them running (:meth:`ModelInvocationJobs.hold`) or end them
``Completed`` without writing any output (:meth:`ModelInvocationJobs.end_empty`), as a faulty provider
might.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from localcloud.patches import Patch

# What the example model server's ``completion`` is: a chat completions body in, status and answer out.
Completion = Callable[[Any], tuple[int, dict[str, Any], dict[str, str]]]

_REQUEST_FIELDS = frozenset(
    {
        "jobName",
        "roleArn",
        "clientRequestToken",
        "modelId",
        "inputDataConfig",
        "outputDataConfig",
        "vpcConfig",
        "timeoutDurationInHours",
        "tags",
        "modelInvocationType",
    }
)
_REQUIRED = ("jobName", "roleArn", "modelId", "inputDataConfig", "outputDataConfig")
_JOB_NAME = re.compile(r"[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\+\-\.]){0,63}")
_ROLE_ARN = re.compile(r"arn:aws(-[^:]+)?:iam::([0-9]{12})?:role/.+")
_S3_URI = re.compile(r"s3://([a-z0-9][-.a-z0-9]{1,61}[a-z0-9])/(.*)")
_RECORD_ID = re.compile(r"[A-Za-z0-9]{11}")
_CONVERSE_FIELDS = frozenset(
    {"messages", "system", "inferenceConfig", "toolConfig", "additionalModelRequestFields"}
)
_INFERENCE_CONFIG = frozenset({"maxTokens", "temperature", "topP", "stopSequences"})
_PROGRESS = ("Submitted", "Validating", "Scheduled", "InProgress")
_ENDED = ("Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired")
MANIFEST = "manifest.json.out"


@dataclass
class _Job:
    arn: str
    job_id: str
    request: dict[str, Any]
    status: str = "Submitted"
    reads: int = 0
    message: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    ending: str | None = None  # the status it ends with, once its output has landed

    def view(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "jobArn": self.arn,
            "jobName": self.request["jobName"],
            "modelId": self.request["modelId"],
            "roleArn": self.request["roleArn"],
            "status": self.status,
            "submitTime": "2026-01-01T00:00:00Z",
            "inputDataConfig": self.request["inputDataConfig"],
            "outputDataConfig": self.request["outputDataConfig"],
            "timeoutDurationInHours": self.request.get("timeoutDurationInHours", 24),
            "modelInvocationType": self.request.get("modelInvocationType", "InvokeModel"),
            **self.counts,
        }
        if "clientRequestToken" in self.request:
            view["clientRequestToken"] = self.request["clientRequestToken"]
        if self.message is not None:
            view["message"] = self.message
        return view


@dataclass
class ModelInvocationJobs:
    """The simulated jobs, the model server that answers their records, and the knobs tests turn."""

    min_records: int = 100
    max_records: int = 50_000
    max_file_bytes: int = 1_000_000_000
    answer: Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)  # every create request, in order
    _jobs: dict[str, _Job] = field(default_factory=dict)
    _failure: str | None = None
    _held: bool = False
    _empty: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self, completion: Completion, models: dict[str, str]) -> None:
        """Answer records with the example server's chat ``completion``, the Bedrock model id ``models``
        maps to an example model asked in its place."""

        def answer(model_id: str, converse: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            text = "".join(
                block.get("text", "")
                for message in converse.get("messages", [])
                if message.get("role") == "user"
                for block in message.get("content", [])
            )
            config = converse.get("inferenceConfig", {})
            body: dict[str, Any] = {
                "model": models.get(model_id, model_id),
                "messages": [{"role": "user", "content": text}],
            }
            if "maxTokens" in config:
                body["max_tokens"] = config["maxTokens"]
            status, chat, _ = completion(body)
            if status != 200:
                return status, chat
            content = chat["choices"][0]["message"]["content"]
            usage = chat.get("usage", {})
            return 200, {
                "output": {"message": {"role": "assistant", "content": [{"text": content}]}},
                "stopReason": "end_turn",
                "usage": {
                    "inputTokens": usage.get("prompt_tokens", 0),
                    "outputTokens": usage.get("completion_tokens", 0),
                    "totalTokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
                },
            }

        self.answer = answer

    def fail(self, message: str) -> None:
        """Every job ends ``Failed`` with ``message`` once it is due to end."""
        with self._lock:
            self._failure = message

    def hold(self) -> None:
        """Every job stays ``InProgress`` however often it is read (for timeout tests)."""
        with self._lock:
            self._held = True

    def end_empty(self) -> None:
        """Every job ends ``Completed`` once it is due to end, with no output written and no counts."""
        with self._lock:
            self._empty = True

    def jobs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [job.view() for job in self._jobs.values()]

    # what the patched moto responses ask

    def create(self, account: str, region: str, request: Any) -> dict[str, Any]:
        from moto.core.exceptions import JsonRESTError

        def refuse(code: str, message: str) -> JsonRESTError:
            error = JsonRESTError(code, message)
            error.code = 409 if code == "ConflictException" else 400
            return error

        if not isinstance(request, dict):
            raise refuse("ValidationException", "the request body must be a JSON object")
        unknown = sorted(set(request) - _REQUEST_FIELDS)
        if unknown:
            raise refuse("ValidationException", f"unknown fields: {', '.join(unknown)}")
        missing = [name for name in _REQUIRED if not request.get(name)]
        if missing:
            raise refuse("ValidationException", f"missing required fields: {', '.join(missing)}")
        if not _JOB_NAME.fullmatch(str(request["jobName"])) or len(str(request["jobName"])) > 63:
            raise refuse("ValidationException", f"jobName {request['jobName']!r} breaks Bedrock's name rules")
        if not _ROLE_ARN.fullmatch(str(request["roleArn"])):
            raise refuse("ValidationException", f"roleArn {request['roleArn']!r} is not an IAM role ARN")
        for config, inner in (
            ("inputDataConfig", "s3InputDataConfig"),
            ("outputDataConfig", "s3OutputDataConfig"),
        ):
            uri = (
                (request[config].get(inner) or {}).get("s3Uri") if isinstance(request[config], dict) else None
            )
            if not isinstance(uri, str) or not _S3_URI.fullmatch(uri):
                raise refuse("ValidationException", f"{config}.{inner}.s3Uri must be an s3:// URI")
        with self._lock:
            self.requests.append(request)
            token = request.get("clientRequestToken")
            for job in self._jobs.values():
                if job.request["jobName"] == request["jobName"]:
                    if token is not None and job.request.get("clientRequestToken") == token:
                        return {"jobArn": job.arn}  # the same request again: Bedrock ignores it
                    raise refuse("ConflictException", f"a job named {request['jobName']} already exists")
            job_id = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12))
            arn = f"arn:aws:bedrock:{region}:{account}:model-invocation-job/{job_id}"
            self._jobs[job_id] = _Job(arn, job_id, request)
            return {"jobArn": arn}

    def read(self, account: str, identifier: str) -> dict[str, Any]:
        from moto.core.exceptions import JsonRESTError

        job_id = identifier.rsplit("/", 1)[-1]
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                error = JsonRESTError("ResourceNotFoundException", f"no model invocation job {identifier}")
                error.code = 404
                raise error
            if job.status not in _ENDED:
                job.reads += 1
                self._advance(account, job)
            return job.view()

    def _advance(self, account: str, job: _Job) -> None:
        if job.reads < len(_PROGRESS) or self._held:
            job.status = _PROGRESS[min(job.reads, len(_PROGRESS) - 1)]
            if job.status == "Scheduled":
                job.message = self._invalid(account, job)
                if job.message is not None:
                    job.status = "Failed"
            return
        if self._failure is not None:
            job.status, job.message = "Failed", self._failure
            return
        if self._empty:
            job.status = "Completed"
            return
        if job.ending is not None:
            job.status = job.ending
            return
        # The output lands while the job still reads InProgress, and the next read says it ended: the
        # provider writes before whoever polls it hears, so the run may be assembled (even scored) by then.
        self._run(account, job)

    def _input(self, account: str, job: _Job) -> tuple[str, str, bytes | None]:
        from moto.s3.models import s3_backends

        match = _S3_URI.fullmatch(job.request["inputDataConfig"]["s3InputDataConfig"]["s3Uri"])
        assert match is not None  # checked at create
        bucket, key = match[1], match[2]
        found = s3_backends[account]["aws"].get_object(bucket, key)
        return bucket, key, None if found is None else found.value

    def _invalid(self, account: str, job: _Job) -> str | None:
        """Why validation fails the job (Bedrock's checks, stricter), or None."""
        bucket, key, data = self._input(account, job)
        if data is None:
            return f"the input s3://{bucket}/{key} does not exist"
        if not key.endswith(".jsonl"):
            return f"the input {key} is not a .jsonl file"
        if len(data) > self.max_file_bytes:
            return f"the input file is {len(data)} bytes, more than the {self.max_file_bytes} a job takes"
        lines = [line for line in data.decode("utf-8", errors="replace").splitlines() if line.strip()]
        if not self.min_records <= len(lines) <= self.max_records:
            return (
                f"the job has {len(lines)} records; a job takes between {self.min_records} and "
                f"{self.max_records}"
            )
        ids: set[str] = set()
        for number, line in enumerate(lines, start=1):
            problem = _record_problem(line, job.request.get("modelInvocationType", "InvokeModel"))
            if problem is None:
                record_id = json.loads(line)["recordId"]
                problem = f"recordId {record_id} is repeated" if record_id in ids else None
                ids.add(record_id)
            if problem is not None:
                return f"line {number} of the input: {problem}"
        return None

    def _run(self, account: str, job: _Job) -> None:
        from moto.s3.models import s3_backends

        _, key, data = self._input(account, job)
        assert data is not None  # validated
        out: list[dict[str, Any]] = []
        errors = 0
        for line in data.decode("utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            output: dict[str, Any]
            if self.answer is None:
                status, output = 503, {"error": {"message": "no model server serves these simulated jobs"}}
            else:
                status, output = self.answer(job.request["modelId"], record["modelInput"])
            if status == 200:
                out.append({**record, "modelOutput": output})
            else:
                errors += 1
                message = (output.get("error") or {}).get("message")
                out.append({**record, "error": {"errorCode": status, "errorMessage": str(message or output)}})
        match = _S3_URI.fullmatch(job.request["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        assert match is not None
        out_bucket, prefix = match[1], match[2]
        folder = f"{prefix.rstrip('/')}/{job.job_id}/" if prefix else f"{job.job_id}/"
        total = len(out)
        job.counts = {
            "totalRecordCount": total,
            "processedRecordCount": total,
            "successRecordCount": total - errors,
            "errorRecordCount": errors,
        }
        backend = s3_backends[account]["aws"]
        body = "".join(json.dumps(record) + "\n" for record in out).encode()
        backend.put_object(out_bucket, folder + key.rsplit("/", 1)[-1] + ".out", body)
        manifest = {**job.counts, "inputTokenCount": 0, "outputTokenCount": 0}
        backend.put_object(out_bucket, folder + MANIFEST, json.dumps(manifest).encode())
        job.ending = "PartiallyCompleted" if errors else "Completed"


def _record_problem(line: str, invocation_type: str) -> str | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return "not JSON"
    if not isinstance(record, dict) or set(record) != {"recordId", "modelInput"}:
        keys = sorted(record) if isinstance(record, dict) else type(record).__name__
        return f"a record is exactly {{recordId, modelInput}}, this one has {keys}"
    if not isinstance(record["recordId"], str) or not _RECORD_ID.fullmatch(record["recordId"]):
        return f"recordId {record['recordId']!r} is not an 11-character alphanumeric string"
    model_input = record["modelInput"]
    if not isinstance(model_input, dict):
        return "modelInput is not a JSON object"
    if invocation_type == "Converse":
        unknown = sorted(set(model_input) - _CONVERSE_FIELDS)
        if unknown or not isinstance(model_input.get("messages"), list):
            return f"modelInput is not a Converse request (unknown {unknown}, or no messages)"
        config = model_input.get("inferenceConfig", {})
        if not isinstance(config, dict) or set(config) - _INFERENCE_CONFIG:
            extra = sorted(set(config) - _INFERENCE_CONFIG) if isinstance(config, dict) else config
            return f"inferenceConfig has fields Converse does not take: {extra}"
    return None


def jobs_of(clock: Any) -> ModelInvocationJobs:
    """The simulated jobs a provider clock keeps (``clock.state``), which tests tune and read."""
    jobs: ModelInvocationJobs = clock.state("bedrock_batches", ModelInvocationJobs)
    return jobs


def patches(jobs: ModelInvocationJobs) -> list[Patch]:
    """Answer CreateModelInvocationJob, GetModelInvocationJob and Converse on moto's Bedrock from
    ``jobs``, while the provider clock is entered."""
    from moto.bedrock.responses import BedrockResponse
    from moto.bedrockruntime.responses import BedrockRuntimeResponse

    def create_model_invocation_job(response: Any) -> str:
        try:
            request = json.loads(response.body or b"null")
        except json.JSONDecodeError:
            request = None
        return json.dumps(jobs.create(response.current_account, response.region, request))

    def get_model_invocation_job(response: Any) -> str:
        from urllib.parse import unquote

        identifier = unquote(response.path.split("/model-invocation-job/", 1)[-1])
        return json.dumps(jobs.read(response.current_account, identifier))

    def converse(response: Any) -> str:
        from urllib.parse import unquote

        from moto.core.exceptions import JsonRESTError

        model_id = unquote(response.path.split("/model/", 1)[-1].rsplit("/converse", 1)[0])
        request = json.loads(response.body or b"{}")
        if jobs.answer is None:
            error = JsonRESTError("ServiceUnavailableException", "no model server serves simulated Bedrock")
            error.code = 503
            raise error
        status, output = jobs.answer(model_id, request)
        if status != 200:
            message = (output.get("error") or {}).get("message") if isinstance(output, dict) else output
            code = "ThrottlingException" if status == 429 else "ValidationException"
            error = JsonRESTError(code if status < 500 else "InternalServerException", str(message))
            error.code = status
            raise error
        return json.dumps({**output, "metrics": {"latencyMs": 0}})

    return [
        Patch(BedrockResponse, "create_model_invocation_job", create_model_invocation_job),
        Patch(BedrockResponse, "get_model_invocation_job", get_model_invocation_job),
        # Bedrock's on-demand calls too (moto 5.2.5 raises NotImplementedError): a live run's reachability
        # check and its on-demand cases reach the same simulated models as its batch jobs.
        Patch(BedrockRuntimeResponse, "converse", converse),
    ]
