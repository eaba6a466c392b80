"""The openai-compatible kind's local fake: SIMULATED Together-style files and fine-tune jobs, which the
local example model server (``localcloud/model_server.py``) serves; nothing is trained.

A job walks ``pending -> queued -> running`` one step per read (``GET /fine-tunes/{id}``) and is
``completed`` after ``polls_to_complete`` reads, naming ``example-tuned`` (the tuned example model the
server already answers as) as its ``fine_tuned_model``. Nothing is trained: every job says so. A test can
make jobs fail with a message (``fail``), keep them running forever (``hold``), make the service answer
an error status for a while (``outage``), and read what was asked.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

from localcloud.patches import Patch
from localcloud.provider_clock import ProviderClock

SIMULATED_TRAINING = "simulated fine-tune: nothing is trained; the result is the example server's tuned model"
DEFAULT_POLLS_TO_COMPLETE = 3
_PROGRESS = ("pending", "queued", "running")
_ENDED = ("completed", "error", "cancelled")


@dataclass
class _Job:
    job_id: str
    body: dict[str, Any]
    reads: int = 0
    status: str = "pending"
    error: str | None = None
    result: str | None = None

    def view(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": self.job_id,
            "object": "fine-tune",
            "status": self.status,
            "model": self.body.get("model"),
            "suffix": self.body.get("suffix"),
            "training_file": self.body.get("training_file"),
            "validation_file": self.body.get("validation_file"),
            "training_method": self.body.get("training_method"),
            "notice": SIMULATED_TRAINING,
        }
        if self.result is not None:
            view["fine_tuned_model"] = self.result
            view["model_output_name"] = self.result
        if self.error is not None:
            view["error"] = {"message": self.error}
        return view


@dataclass
class FineTunes:
    """The uploaded files and fine-tune jobs of one server, and how the jobs are to end."""

    tuned_model: str
    polls_to_complete: int = DEFAULT_POLLS_TO_COMPLETE
    files: dict[str, bytes] = field(default_factory=dict)
    bodies: list[dict[str, Any]] = field(default_factory=list)  # every create body, in order
    _jobs: dict[str, _Job] = field(default_factory=dict)
    _failures: dict[str | None, str] = field(default_factory=dict)
    _held: set[str | None] = field(default_factory=set)
    _outages: list[list[Any]] = field(default_factory=list)  # [route prefix, status, times, retry_after]
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, message: str, suffix: str | None = None) -> None:
        """Jobs with ``suffix`` (every job when None) end in ``error`` with ``message``."""
        with self._lock:
            self._failures[suffix] = message

    def hold(self, suffix: str | None = None) -> None:
        """Jobs with ``suffix`` (every job when None) keep running forever (for timeout tests)."""
        with self._lock:
            self._held.add(suffix)

    def outage(
        self, status: int, times: int = 1, *, route: str = "", retry_after: float | None = None
    ) -> None:
        """Answer ``status`` to the next ``times`` fine-tuning requests whose "METHOD /path" starts with
        ``route`` (every one when empty), with Retry-After when given."""
        with self._lock:
            self._outages.append([route, status, times, retry_after])

    def take_outage(self, route: str) -> tuple[int, dict[str, Any], dict[str, str]] | None:
        """The injected answer for this request, if one is waiting."""
        with self._lock:
            for outage in self._outages:
                prefix, status, _, retry_after = outage
                if route.startswith(prefix):
                    outage[2] -= 1
                    if outage[2] <= 0:
                        self._outages.remove(outage)
                    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
                    return status, _error(f"injected fault {status}"), headers
            return None

    def upload(self, filename: str, purpose: str, data: bytes) -> tuple[int, dict[str, Any]]:
        if purpose != "fine-tune":
            return 400, _error(f"purpose must be fine-tune, not {purpose!r}")
        if not data:
            return 400, _error(f"file {filename!r} is empty")
        file_id = "file-" + hashlib.sha256(data).hexdigest()[:24]
        with self._lock:
            self.files[file_id] = data
        return 200, {
            "id": file_id,
            "object": "file",
            "filename": filename,
            "purpose": purpose,
            "bytes": len(data),
        }

    def create(self, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return 400, _error("the body must be a JSON object naming model and training_file")
        with self._lock:
            for name in ("training_file", "validation_file"):
                file_id = body.get(name)
                if (name == "training_file" or file_id is not None) and file_id not in self.files:
                    return 400, _error(f"{name} {file_id!r} was not uploaded to this server")
            self.bodies.append(body)
            job = _Job(f"ft-{len(self._jobs) + 1:06d}", body)
            self._jobs[job.job_id] = job
            return 200, job.view()

    def listing(self) -> dict[str, Any]:
        with self._lock:
            return {"object": "list", "data": [job.view() for job in self._jobs.values()]}

    def read(self, job_id: str) -> tuple[int, dict[str, Any]]:
        """One poll: the job moves a step on, then answers."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return 404, _error(f"no fine-tune job {job_id!r}")
            if job.status not in _ENDED:
                job.reads += 1
                self._advance(job)
            return 200, job.view()

    def cancel(self, job_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return 404, _error(f"no fine-tune job {job_id!r}")
            if job.status not in _ENDED:
                job.status = "cancelled"
            return 200, job.view()

    def _advance(self, job: _Job) -> None:
        suffix = job.body.get("suffix")
        if job.reads < self.polls_to_complete or suffix in self._held or None in self._held:
            job.status = _PROGRESS[min(job.reads, len(_PROGRESS) - 1)]
            return
        failure = self._failures.get(suffix, self._failures.get(None))
        if failure is not None:
            job.status, job.error = "error", failure
        else:
            job.status, job.result = "completed", self.tuned_model


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def patches(clock: ProviderClock) -> list[Patch]:
    """None: the service is reached at a base URL, not through moto, and its jobs move with the reads
    :class:`FineTunes` gets."""
    return []
