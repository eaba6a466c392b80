"""Together-style files and fine-tune jobs, trained for real, one job at a time, each in its own process.

``POST /files`` keeps an upload under ``<work>/files/``; ``POST /fine-tunes`` checks the body and every row
of the training file at once (a bad row ends the job in ``error`` naming its line), then queues the job:
SFT on demonstration rows (Together's ``training_method``), or GRPO on prompt rows rewarded by a python
grader (OpenAI's reinforcement ``method`` object); ``model`` may be a checkpoint this server trained;
a worker thread runs queued jobs one after another (``python -m modelserver.train``), and a job that
trained saves its checkpoint under ``<work>/models/<fine_tuned_model>/`` and is served from then on.
``POST /fine-tunes/{id}/cancel`` kills a running job's process: a cancelled job serves no model.

Statuses, as the openai-compatible kind reads them: ``pending`` (created), ``queued`` (rows checked,
waiting for the trainer), ``running``, ``cancel_requested`` (its process is being stopped), and the ends
``completed``, ``error``, ``cancelled``. Each job keeps its timeline (``events``) and its last logged step.
Jobs are kept in ``<work>/jobs/<id>/job.json``; one that was not over when the server stopped is ``error``
when it starts again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from modelserver import train
from modelserver.catalog import Catalog
from modelserver.chat import BadRequest, checked_number
from modelserver.grader import BadGrader, check
from modelserver.rows import REINFORCEMENT, SFT, BadRows, read_rows

ENDED = ("completed", "error", "cancelled")
DEFAULTS: dict[str, float | int] = {
    "n_epochs": 1,
    "learning_rate": 1e-5,
    "batch_size": 8,
    "warmup_ratio": 0.0,
}
# Checked before a job is created, so a job that cannot train is never queued.
BOUNDS: dict[str, tuple[float, float]] = {
    "n_epochs": (1, 100),
    "learning_rate": (0, 1),
    "batch_size": (1, 1024),
    "warmup_ratio": (0, 1),
}
# A reinforcement job's numbers (inside OpenAI's method.reinforcement.hyperparameters). n_epochs and
# batch_size keep OpenAI's names and meaning (batch_size: prompts a step); the rest are GRPO's own, as TRL's
# GRPOConfig names them: answers sampled per prompt, their most tokens, their sampling temperature, and the
# KL coefficient (0 loads no reference model). Small, for a CPU; what a step of them costs on the real model
# is measured in docs/model-server.md. Two bounds have no default, since a job without them trains its
# epochs: max_steps (transformers' name) ends training after that many steps, and max_seconds before a step
# that would end past that many seconds of training, so that a job on a slow machine has a known end.
RL_DEFAULTS: dict[str, float | int] = {
    "n_epochs": 1,
    "learning_rate": 1e-5,
    "batch_size": 4,
    "num_generations": 4,
    "max_completion_length": 64,
    "temperature": 1.0,
    "beta": 0.0,
}
RL_BOUNDS: dict[str, tuple[float, float]] = {
    **{name: BOUNDS[name] for name in ("n_epochs", "learning_rate", "batch_size")},
    "num_generations": (2, 64),
    "max_completion_length": (1, 4096),
    "temperature": (0, 2),
    "beta": (0, 10),
    "max_steps": (1, 1_000_000),
    "max_seconds": (1, 7 * 24 * 3600),
}
_WHOLE = ("n_epochs", "batch_size", "num_generations", "max_completion_length", "max_steps")
DPO_REFUSED = (
    "preference (dpo) training is not supported by this server: train with training_method "
    '{"method": "sft"} on demonstration rows, or method {"type": "reinforcement"} with a grader'
)
STOP_GRACE_S = 10.0
CANCEL_WAIT_S = 30.0
# Run by a separate interpreter that inherits no API key (the server holds it in memory only).
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}

Answer = tuple[int, dict[str, Any]]


@dataclass
class Job:
    id: str
    model: str
    fine_tuned_model: str
    suffix: str | None
    training_file: str
    validation_file: str | None
    hyperparameters: dict[str, float | int]
    created_at: int
    status: str = "pending"
    error: str | None = None
    method: str = SFT
    grader: dict[str, str] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    def move(self, status: str, message: str) -> None:
        self.status = status
        self.events.append({"status": status, "created_at": int(time.time()), "message": message})


class FineTuneJobs:
    """The files and jobs of one server under ``work``; trained models go into ``catalog``."""

    def __init__(
        self, work: Path, catalog: Catalog, *, python: str = sys.executable, engine: str = "auto"
    ) -> None:
        self._files = work / "files"
        self._engine = engine
        self._jobs = work / "jobs"
        self._catalog = catalog
        self._python = python
        self._lock = threading.Condition()
        self._known: dict[str, Job] = {}
        self._queue: list[str] = []
        self._running: dict[str, subprocess.Popen[bytes]] = {}
        self._stopped = False
        self._thread: threading.Thread | None = None
        for record in sorted(self._jobs.glob("*/job.json"), key=lambda p: p.stat().st_mtime):
            job = Job(**json.loads(record.read_text(encoding="utf-8")))
            if job.status not in ENDED:
                job.move("error", "the server stopped before this job finished: start it again")
                self._save(job)
            self._known[job.id] = job

    def start(self) -> None:
        self._thread = threading.Thread(target=self._work, name="fine-tunes", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            for process in self._running.values():
                _signal(process, signal.SIGTERM)
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=STOP_GRACE_S + 5)
            self._thread = None

    # the routes

    def upload(self, filename: str, purpose: str, data: bytes) -> Answer:
        if purpose != "fine-tune":
            raise BadRequest(f"purpose must be fine-tune, not {purpose!r}")
        if not data:
            raise BadRequest(f"the file {filename!r} is empty: upload JSON Lines of training rows")
        file_id = "file-" + hashlib.sha256(data).hexdigest()[:24]
        self._files.mkdir(parents=True, exist_ok=True)
        if not (self._files / f"{file_id}.jsonl").exists():
            train.write_json(self._files / f"{file_id}.json", {"filename": filename, "bytes": len(data)})
            partial = self._files / f".{file_id}.partial"
            partial.write_bytes(data)
            os.replace(partial, self._files / f"{file_id}.jsonl")
        return 200, {
            "id": file_id,
            "object": "file",
            "filename": filename,
            "purpose": purpose,
            "bytes": len(data),
        }

    def create(self, body: Any) -> Answer:
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object naming model and training_file")
        model = body.get("model")
        if model not in self._catalog.ids():
            raise BadRequest(
                f"no model {model!r} to fine-tune: this server serves {', '.join(self._catalog.ids())}"
            )
        method, grader_view, hyperparameters = _method(body)
        training_file = self._file(body.get("training_file"), "training_file")
        validation = body.get("validation_file")
        validation_file = self._file(validation, "validation_file") if validation is not None else None
        suffix = body.get("suffix")
        if suffix is not None and not isinstance(suffix, str):
            raise BadRequest("suffix must be a string")
        job_id = f"ft-{uuid.uuid4().hex[:24]}"
        try:
            tuned = self._catalog.checkpoint_folder(f"{model}-{suffix or job_id}").name
        except ValueError as bad:
            raise BadRequest(f"suffix {suffix!r} cannot name the tuned model: {bad}") from None
        job = Job(
            id=job_id,
            model=str(model),
            fine_tuned_model=tuned,
            suffix=suffix,
            training_file=training_file,
            validation_file=validation_file,
            hyperparameters=hyperparameters,
            created_at=int(time.time()),
            method=method,
            grader=grader_view,
        )
        with self._lock:
            taken = tuned in self._catalog.ids() or any(
                j.fine_tuned_model == tuned and j.status not in ("error", "cancelled")
                for j in self._known.values()
            )
            if taken:
                raise BadRequest(
                    f"a model named {tuned} exists or is being trained: choose another suffix", 409
                )
            job.move("pending", "job created")
            self._known[job.id] = job
        try:
            for file_id in filter(None, (training_file, validation_file)):
                read_rows(self._files / f"{file_id}.jsonl", self._filename(file_id), job.method)
        except BadRows as bad:
            job.error = str(bad)
            job.move("error", job.error)
        else:
            job.move("queued", "rows checked; waiting for the trainer")
        with self._lock:
            self._save(job)
            if job.status == "queued":
                self._queue.append(job.id)
                self._lock.notify_all()
            return 200, self._view(job)

    def listing(self) -> Answer:
        with self._lock:
            return 200, {"object": "list", "data": [self._view(job) for job in self._known.values()]}

    def read(self, job_id: str) -> Answer:
        with self._lock:
            return 200, self._view(self._job(job_id))

    def cancel(self, job_id: str) -> Answer:
        with self._lock:
            job = self._job(job_id)
            if job.status in ("pending", "queued"):
                if job.id in self._queue:
                    self._queue.remove(job.id)
                job.move("cancelled", "cancelled before training started")
                self._save(job)
            elif job.status == "running":
                job.move("cancel_requested", "stopping the training process")
                self._save(job)
                _signal(self._running[job.id], signal.SIGTERM)
            deadline = time.monotonic() + CANCEL_WAIT_S
            while job.status == "cancel_requested" and time.monotonic() < deadline:
                self._lock.wait(timeout=deadline - time.monotonic())
            return 200, self._view(job)

    # the worker

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopped:
                    self._lock.wait()
                if self._stopped:
                    return
                job = self._known[self._queue.pop(0)]
                process = self._spawn(job)
                self._running[job.id] = process
                job.move("running", "training started")
                self._save(job)
            code = self._wait(job, process)
            with self._lock:
                del self._running[job.id]
                self._finish(job, code)
                self._save(job)
                self._lock.notify_all()

    def _spawn(self, job: Job) -> subprocess.Popen[bytes]:
        folder = self._jobs / job.id
        partial = self._catalog.checkpoints / f".{job.fine_tuned_model}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        spec = {
            "base_folder": str(self._catalog.folder(job.model)),
            "training_file": str(self._files / f"{job.training_file}.jsonl"),
            "training_name": self._filename(job.training_file),
            "validation_file": str(self._files / f"{job.validation_file}.jsonl")
            if job.validation_file
            else None,
            "validation_name": self._filename(job.validation_file) if job.validation_file else None,
            "hyperparameters": job.hyperparameters,
            "method": job.method,
            "grader": job.grader,
            # The engine the server was asked for: a GRPO job samples its answers with the one it picks.
            "engine": self._engine,
            "output": str(partial),
        }
        train.write_json(folder / train.SPEC, spec)
        with (folder / "train.log").open("ab") as log:
            return subprocess.Popen(  # noqa: S603 - this interpreter, running this package's module
                [self._python, "-m", "modelserver.train", str(folder)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **OFFLINE},
                start_new_session=True,
            )

    def _wait(self, job: Job, process: subprocess.Popen[bytes]) -> int:
        """The process's exit code; once it was asked to stop, it has STOP_GRACE_S before it is killed."""
        asked: float | None = None
        while True:
            try:
                return process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                with self._lock:
                    stopping = job.status == "cancel_requested" or self._stopped
                if stopping and asked is None:
                    asked = time.monotonic()
                elif asked is not None and time.monotonic() - asked > STOP_GRACE_S:
                    _signal(process, signal.SIGKILL)

    def _finish(self, job: Job, code: int) -> None:
        partial = self._catalog.checkpoints / f".{job.fine_tuned_model}.partial"
        if job.status == "cancel_requested" or self._stopped:
            shutil.rmtree(partial, ignore_errors=True)
            if job.status == "cancel_requested":
                job.move("cancelled", "training stopped; no model is served")
            else:
                job.move("error", "the server stopped during training: start the job again")
            return
        if code == 0 and (partial / "config.json").is_file():
            partial.rename(self._catalog.checkpoint_folder(job.fine_tuned_model))
            self._catalog.add(job.fine_tuned_model, job.model)
            job.move("completed", f"trained; served as {job.fine_tuned_model}")
            return
        shutil.rmtree(partial, ignore_errors=True)
        job.error = self._failure(job, code)
        job.move("error", job.error)

    def _failure(self, job: Job, code: int) -> str:
        failure = self._jobs / job.id / train.FAILURE
        if failure.is_file():
            return str(json.loads(failure.read_text(encoding="utf-8"))["message"])
        if code < 0:
            name = signal.Signals(-code).name
            likely = ", most likely by the system for want of memory: lower batch_size" if -code == 9 else ""
            return f"the training process was killed by {name}{likely}"
        return f"the training process exited with status {code}; see {self._jobs / job.id / 'train.log'}"

    # records

    def _file(self, file_id: Any, name: str) -> str:
        if not isinstance(file_id, str) or not (self._files / f"{file_id}.jsonl").is_file():
            raise BadRequest(
                f"{name} {file_id!r} was not uploaded to this server: POST it to /v1/files first"
            )
        return file_id

    def _filename(self, file_id: str) -> str:
        meta = self._files / f"{file_id}.json"
        name = json.loads(meta.read_text(encoding="utf-8")).get("filename") if meta.is_file() else None
        return str(name or file_id)

    def _job(self, job_id: str) -> Job:
        job = self._known.get(job_id)
        if job is None:
            raise BadRequest(f"no fine-tune job {job_id!r}", status=404)
        return job

    def _save(self, job: Job) -> None:
        folder = self._jobs / job.id
        folder.mkdir(parents=True, exist_ok=True)
        train.write_json(folder / "job.json", asdict(job))

    def _view(self, job: Job) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": job.id,
            "object": "fine-tune",
            "status": job.status,
            "model": job.model,
            "suffix": job.suffix,
            "training_file": job.training_file,
            "validation_file": job.validation_file,
            **_method_view(job),
            "training_type": {"type": "Full"},
            "created_at": job.created_at,
            "updated_at": job.events[-1]["created_at"] if job.events else job.created_at,
            "events": job.events,
        }
        progress = self._jobs / job.id / train.PROGRESS
        if progress.is_file():
            view["progress"] = json.loads(progress.read_text(encoding="utf-8"))
        if job.status == "completed":
            view["fine_tuned_model"] = view["model_output_name"] = job.fine_tuned_model
        if job.error is not None:
            view["error"] = {"message": job.error}
        return view


def _method(body: dict[str, Any]) -> tuple[str, dict[str, str] | None, dict[str, float | int]]:
    """The job's method, its grader (reinforcement) and its hyperparameters, from Together's
    ``training_method`` with top-level numbers (SFT), or OpenAI's ``method`` object (reinforcement)."""
    method = body.get("method")
    if method is None:
        together = body.get("training_method") or {"method": SFT}
        if not isinstance(together, dict) or together.get("method", SFT) != SFT:
            raise BadRequest(DPO_REFUSED)
        return SFT, None, _numbers(body, DEFAULTS, BOUNDS)
    # OpenAI's fine-tuning method object: {"type": "supervised" | "dpo" | "reinforcement", <type>: {...}};
    # reinforcement's holds "grader" (here a python grader) and "hyperparameters".
    kind = method.get("type") if isinstance(method, dict) else None
    if kind != REINFORCEMENT:
        if kind == "dpo":
            raise BadRequest(DPO_REFUSED)
        raise BadRequest(
            'method must be {"type": "reinforcement", "reinforcement": {"grader": {...}, "hyperparameters": '
            '{...}}}; train demonstration rows with training_method {"method": "sft"}'
        )
    settings = method.get(REINFORCEMENT)
    if not isinstance(settings, dict):
        raise BadRequest('method.reinforcement must be an object holding "grader" and "hyperparameters"')
    try:
        grader = check(settings.get("grader"))
    except BadGrader as bad:
        raise BadRequest(str(bad)) from None
    numbers = settings.get("hyperparameters") or {}
    if not isinstance(numbers, dict):
        raise BadRequest("method.reinforcement.hyperparameters must be an object of numbers")
    unknown = sorted(set(numbers) - set(RL_BOUNDS))
    if unknown:
        raise BadRequest(
            f"method.reinforcement.hyperparameters has {', '.join(unknown)}, which this server does not "
            f"take: it takes {', '.join(RL_BOUNDS)}"
        )
    return REINFORCEMENT, grader, _numbers(numbers, RL_DEFAULTS, RL_BOUNDS)


def _numbers(
    body: dict[str, Any], defaults: dict[str, float | int], bounds: dict[str, tuple[float, float]]
) -> dict[str, float | int]:
    values = dict(defaults)
    for name, (low, high) in bounds.items():
        value = body.get(name)
        if value is not None:
            # A learning rate or a temperature of 0 trains nothing.
            values[name] = checked_number(
                name,
                value,
                low=low,
                high=high,
                whole=name in _WHOLE,
                low_open=name in ("learning_rate", "temperature"),
            )
    return values


def _method_view(job: Job) -> dict[str, Any]:
    """How a job's method and numbers read back: Together's shape for SFT, OpenAI's for reinforcement (the
    grader's name, not its source)."""
    if job.method != REINFORCEMENT:
        return {"training_method": {"method": SFT}, **job.hyperparameters}
    grader = job.grader or {}
    return {
        "training_method": {"method": REINFORCEMENT},
        "method": {
            "type": REINFORCEMENT,
            REINFORCEMENT: {
                "grader": {"type": "python", "name": grader.get("name")},
                "hyperparameters": job.hyperparameters,
            },
        },
    }


def _signal(process: subprocess.Popen[bytes], number: signal.Signals) -> None:
    """``number`` to the training process and anything it started (its own session's process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)
