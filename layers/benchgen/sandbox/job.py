"""A program run as data: the command, the folders it sees, which it may write, and what it produced."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Protocol

from pydantic import ConfigDict, Field

from benchgen.bundle.runtime import MINIMAL
from benchgen.errors import BundleError
from benchgen.lazy_model import LazyModel

OUTPUT_CAP = 1024 * 1024
_PYTHON_NAMES = re.compile(r"^python(3(\.\d+)?)?$")
_PLACEHOLDER = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_APP_PATH = re.compile(r"(?<![\w.$/-])/app(?=/|\s|$)")


class ProgramJob(LazyModel):
    """``folders`` maps each placeholder of ``command`` (``input``, ``output``, ``program`` ...) to a folder
    on this machine; ``cwd`` names the one the program runs in. Only the folders named in ``writable`` may
    be written; the files of those named in ``collect`` are copied back after the run. ``app`` maps each
    folder under ``/app`` the program finds (``program``, ``input``, ...) to the placeholder it is.
    ``runtime`` names the runtime whose ``python`` runs it (see :mod:`benchgen.bundle.runtime`)."""

    model_config = ConfigDict(frozen=True)

    command: str
    runtime: str = MINIMAL.name
    cwd: str = "program"
    folders: dict[str, Path]
    writable: frozenset[str] = frozenset({"output", "shared"})
    collect: tuple[str, ...] = ("output",)
    time_limit: int = Field(gt=0)
    output_cap: int = Field(default=OUTPUT_CAP, ge=0)
    app: dict[str, str] = Field(default_factory=dict)


class StagedJob(LazyModel):
    """A job whose folders were copied under one root: each folder as a path relative to that root."""

    model_config = ConfigDict(frozen=True)

    command: str
    runtime: str = MINIMAL.name
    cwd: str
    folders: dict[str, str]
    writable: list[str]
    collect: dict[str, str]
    time_limit: int = Field(gt=0)
    output_cap: int = Field(ge=0)
    app: dict[str, str] = Field(default_factory=dict)  # folder under /app -> its place under the root


class ProgramResult(LazyModel):
    """What a program run produced; stdout and stderr keep at most their last ``OUTPUT_CAP`` bytes."""

    model_config = ConfigDict(frozen=True)

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    command: list[str] = Field(default_factory=list)
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    # Processes the program left running when it ended (e.g. a daemon in a new session): all were killed.
    stray_processes: int = 0
    # Names numpy removed in 1.24 (np.float ...) that the program's own code asked for and did not get,
    # and the runtime's numpy version (see benchgen/sandbox/startup/sitecustomize.py).
    removed_names: tuple[str, ...] = ()
    numpy_version: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class Sandbox(Protocol):
    """Runs a program where it reaches no credential, no data bucket and no table."""

    def run(self, job: ProgramJob) -> ProgramResult: ...


def uses_app(command: str) -> bool:
    """Whether ``command`` names a path under ``/app``, the folders of Codabench's containers."""
    return _APP_PATH.search(command) is not None


def build_argv(command: str, substitutions: dict[str, Path], interpreter: Path) -> list[str]:
    """Split ``command`` into words, then fill each word's placeholders (paths with spaces stay one word);
    a leading ``python``/``python3``/``python3.x`` is the runtime's ``interpreter``."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return str(substitutions[name]) if name in substitutions else match.group(0)

    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise BundleError(
            "metadata.yaml", f"cannot be split into words ({exc}); check the quotes", "command"
        ) from exc
    argv = [_PLACEHOLDER.sub(fill, word) for word in words]
    if argv and _PYTHON_NAMES.match(argv[0]):
        argv[0] = str(interpreter)
    return argv
