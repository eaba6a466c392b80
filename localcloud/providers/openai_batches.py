"""SIMULATED OpenAI Batch API on the local example model server: ``POST /v1/files`` (purpose ``batch``),
``POST /v1/batches``, ``GET /v1/batches[/{id}]``, ``GET /v1/files/{id}/content``.

A batch walks ``validating -> in_progress -> finalizing`` one step per read and ends ``completed`` on the
read after; then each request is answered by the server's chat completions (so a fault injected for a
case fails that request), answers going to the output file and refusals to the error file, as OpenAI
splits them. It is stricter than OpenAI where that is cheap: a request line must be exactly
``{"custom_id", "method", "url", "body"}`` (POST, the batch's endpoint, a unique id, one model for the
file), within the documented limits (50,000 requests, 200 MB; lowered for tests through the knobs), and
a create body takes only the fields OpenAI documents. A file that breaks a rule fails its batch at
validation with the line, as OpenAI does. A test can fail every batch or keep them running, or make it
a hostile provider: lay fields over what an ended batch answers, and rewrite the output file it writes.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ENDPOINT = "/v1/chat/completions"
_CREATE_FIELDS = frozenset(
    {"input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after"}
)
_LINE_FIELDS = frozenset({"custom_id", "method", "url", "body"})
_PROGRESS = ("validating", "in_progress", "finalizing")
_ENDED = ("completed", "failed", "expired", "cancelled")

Answer = Callable[[Any], tuple[int, dict[str, Any], dict[str, str]]]


@dataclass
class _Batch:
    batch_id: str
    body: dict[str, Any]
    status: str = "validating"
    reads: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})
    output_file_id: str | None = None
    error_file_id: str | None = None

    def view(self) -> dict[str, Any]:
        return {
            "id": self.batch_id,
            "object": "batch",
            "endpoint": self.body["endpoint"],
            "input_file_id": self.body["input_file_id"],
            "completion_window": self.body["completion_window"],
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "request_counts": dict(self.counts),
            "metadata": self.body.get("metadata"),
        }


@dataclass
class Batches:
    """One server's batch files and batches, and how they are to end."""

    answer: Answer
    max_requests: int = 50_000
    max_bytes: int = 200 * 1024 * 1024
    polls_to_complete: int = len(_PROGRESS)
    files: dict[str, bytes] = field(default_factory=dict)
    bodies: list[dict[str, Any]] = field(default_factory=list)  # every create body, in order
    _batches: dict[str, _Batch] = field(default_factory=dict)
    _failure: str | None = None
    _held: bool = False
    _ended_answer: dict[str, Any] = field(default_factory=dict)
    _rewrite_output: Callable[[bytes], bytes] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, message: str) -> None:
        """Every batch ends ``failed`` with ``message`` once it is due to end."""
        with self._lock:
            self._failure = message

    def hold(self) -> None:
        with self._lock:
            self._held = True

    def answer_ended(self, fields: dict[str, Any]) -> None:
        """Every ended batch answers with ``fields`` laid over what it would say."""
        with self._lock:
            self._ended_answer = dict(fields)

    def rewrite_output(self, rewrite: Callable[[bytes], bytes]) -> None:
        """Every batch's output file holds ``rewrite`` of the lines it would hold."""
        with self._lock:
            self._rewrite_output = rewrite

    def upload(self, filename: str, data: bytes) -> tuple[int, dict[str, Any]]:
        if not data:
            return 400, _error(f"file {filename!r} is empty")
        if len(data) > self.max_bytes:
            return 400, _error(f"file {filename!r} is {len(data)} bytes; a batch file holds {self.max_bytes}")
        file_id = "file-" + hashlib.sha256(data).hexdigest()[:24]
        with self._lock:
            self.files[file_id] = data
        return 200, {
            "id": file_id,
            "object": "file",
            "filename": filename,
            "purpose": "batch",
            "bytes": len(data),
        }

    def create(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict):
            return 400, _error("the body must be a JSON object")
        unknown = sorted(set(body) - _CREATE_FIELDS)
        if unknown:
            return 400, _error(f"unknown fields: {', '.join(unknown)}")
        if body.get("endpoint") != ENDPOINT:
            return 400, _error(f"endpoint must be {ENDPOINT}, not {body.get('endpoint')!r}")
        if body.get("completion_window") != "24h":
            return 400, _error("completion_window must be 24h")
        with self._lock:
            if body.get("input_file_id") not in self.files:
                return 400, _error(f"input_file_id {body.get('input_file_id')!r} was not uploaded for batch")
            self.bodies.append(body)
            batch = _Batch(f"batch_{len(self._batches) + 1:06d}", body)
            self._batches[batch.batch_id] = batch
            return 200, batch.view()

    def listing(self) -> dict[str, Any]:
        with self._lock:
            return {"object": "list", "data": [batch.view() for batch in self._batches.values()]}

    def read(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        """One poll: the batch moves a step on, then answers."""
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return 404, _error(f"no batch {batch_id!r}")
        if batch.status not in _ENDED:
            batch.reads += 1
            self._advance(batch)
        with self._lock:
            view = batch.view()
            if batch.status in _ENDED:
                view.update(self._ended_answer)
            return 200, view

    def content(self, file_id: str) -> bytes | None:
        with self._lock:
            return self.files.get(file_id)

    def _advance(self, batch: _Batch) -> None:
        if batch.reads < self.polls_to_complete or self._held:
            batch.status = _PROGRESS[min(batch.reads, len(_PROGRESS) - 1)]
            if batch.reads == 1:
                problem = self._invalid(batch)
                if problem is not None:
                    batch.status, batch.errors = "failed", [problem]
            return
        if self._failure is not None:
            batch.status = "failed"
            batch.errors = [{"code": "batch_failed", "message": self._failure, "line": None}]
            return
        self._run(batch)

    def _requests(self, batch: _Batch) -> list[str]:
        data = self.files[batch.body["input_file_id"]]
        return [line for line in data.decode("utf-8", errors="replace").splitlines() if line.strip()]

    def _invalid(self, batch: _Batch) -> dict[str, Any] | None:
        lines = self._requests(batch)
        if len(lines) > self.max_requests:
            return {
                "code": "too_many_requests",
                "message": f"the file has {len(lines)} requests; a batch takes {self.max_requests}",
                "line": None,
            }
        ids: set[str] = set()
        models: set[str] = set()
        for number, line in enumerate(lines, start=1):
            problem = _request_problem(line, ids, models)
            if problem is not None:
                return {"code": "invalid_request", "message": problem, "line": number}
        batch.counts["total"] = len(lines)
        return None

    def _run(self, batch: _Batch) -> None:
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line in self._requests(batch):
            request = json.loads(line)
            status, answer, _ = self.answer(request["body"])
            digest = hashlib.sha256(f"{batch.batch_id}{request['custom_id']}".encode()).hexdigest()[:16]
            entry = {
                "id": f"batch_req_{digest}",
                "custom_id": request["custom_id"],
                "response": {"status_code": status, "request_id": f"req_{digest}", "body": answer},
                "error": None,
            }
            (output if status == 200 else errors).append(entry)
        with self._lock:
            for name, entries in (("output", output), ("error", errors)):
                if entries:
                    data = "".join(json.dumps(entry) + "\n" for entry in entries).encode()
                    if name == "output" and self._rewrite_output is not None:
                        data = self._rewrite_output(data)
                    file_id = f"file-{name}-{batch.batch_id}"
                    self.files[file_id] = data
                    setattr(batch, f"{name}_file_id", file_id)
            batch.counts = {
                "total": len(output) + len(errors),
                "completed": len(output),
                "failed": len(errors),
            }
            batch.status = "completed"


def _request_problem(line: str, ids: set[str], models: set[str]) -> str | None:
    try:
        request = json.loads(line)
    except json.JSONDecodeError:
        return "not JSON"
    if not isinstance(request, dict) or set(request) != _LINE_FIELDS:
        keys = sorted(request) if isinstance(request, dict) else type(request).__name__
        return f"a request is exactly custom_id, method, url and body; this one has {keys}"
    if request["method"] != "POST" or request["url"] != ENDPOINT:
        return f"a request is POST {ENDPOINT}, not {request['method']} {request['url']}"
    custom_id = request["custom_id"]
    if not isinstance(custom_id, str) or not custom_id or custom_id in ids:
        return f"custom_id {custom_id!r} is missing or repeated"
    ids.add(custom_id)
    body = request["body"]
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "body is not a chat completions request naming its model"
    models.add(body["model"])
    if len(models) > 1:
        return f"a batch asks one model; this file asks {sorted(models)}"
    return None


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}
