"""Running a bundle's own scoring or ingestion program the way Codabench runs it, minus the container.

The program folder's ``metadata.yaml`` (or ``metadata``) holds a ``command`` such as
``python $program/score.py $input $output``. It is split into words like a shell would, but run with no
shell; the ``$name`` placeholders become folders of the scoring layout; ``python``/``python3`` mean the
interpreter BenchGen itself runs on, so the program imports what that interpreter has. The program sees
only a small allow-listed environment, so no credential or token of the host ever reaches it, and it is
killed with its whole process group when it passes its time limit.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import yaml
from pydantic import BaseModel, ConfigDict, Field

from benchgen.errors import BundleError, ScoringError, too_deep

METADATA_FILES = ("metadata.yaml", "metadata", "metadata.yml")
OUTPUT_CAP = 1024 * 1024
MAX_SCORES_BYTES = 10 * 1024 * 1024
NO_SCORES = "the scoring program wrote no scores.json (nor scores.txt) in its output folder"
_PYTHON_NAMES = re.compile(r"^python(3(\.\d+)?)?$")
_PLACEHOLDER = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_SEARCH_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


class Layout(BaseModel):
    """The Codabench scoring folders: reference data in input/ref, predictions in input/res."""

    model_config = ConfigDict(frozen=True)

    input: Path
    ref: Path
    res: Path
    output: Path
    shared: Path


def prepare_layout(workdir: Path) -> Layout:
    """Create ``input/ref``, ``input/res``, ``output`` and ``shared`` under ``workdir``."""
    layout = Layout(
        input=workdir / "input",
        ref=workdir / "input" / "ref",
        res=workdir / "input" / "res",
        output=workdir / "output",
        shared=workdir / "shared",
    )
    for folder in (layout.ref, layout.res, layout.output, layout.shared):
        folder.mkdir(parents=True, exist_ok=True)
    return layout


class ProgramResult(BaseModel):
    """What a program run produced; stdout and stderr keep at most their last ``OUTPUT_CAP`` bytes."""

    model_config = ConfigDict(frozen=True)

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    command: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def load_command(program_dir: Path, *, label: str | None = None) -> str:
    """The ``command`` of the program folder's metadata file."""
    name = label or program_dir.name
    metadata = next((program_dir / f for f in METADATA_FILES if (program_dir / f).is_file()), None)
    if metadata is None:
        raise BundleError(
            name, "has no metadata.yaml; add one with `command: python $program/<script>.py $input $output`"
        )
    file = f"{name}/{metadata.name}"
    try:
        data = yaml.safe_load(metadata.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise BundleError(file, f"cannot be read as YAML ({exc}); fix it") from exc
    except RecursionError:
        raise BundleError(file, too_deep()) from None
    command = data.get("command") if isinstance(data, dict) else None
    if not isinstance(command, str) or not command.strip():
        raise BundleError(
            file,
            "missing; write the command that runs the program, e.g. python $program/score.py $input $output",
            field="command",
        )
    return command


def build_argv(command: str, substitutions: dict[str, Path]) -> list[str]:
    """Split ``command`` into words, then fill each word's placeholders (paths with spaces stay one word)."""

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
        argv[0] = sys.executable
    return argv


def _program_env(home: Path) -> dict[str, str]:
    """A fresh environment: nothing is inherited from the host, so no secret can leak into it."""
    search = [str(Path(sys.executable).parent), *_SEARCH_PATH]
    return {
        "PATH": os.pathsep.join(search),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def last_lines(text: str, count: int = 20) -> str:
    """The last ``count`` lines of a program's output, for the message that says why it failed."""
    return "\n".join(text.strip().splitlines()[-count:])


def _tail(stream: IO[bytes], cap: int) -> str:
    stream.flush()
    size = stream.seek(0, os.SEEK_END)
    start = max(0, size - cap)
    stream.seek(start)
    text = stream.read().decode("utf-8", errors="replace")
    return f"[... first {start} bytes cut ...]\n{text}" if start else text


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return


def run_program(
    program_dir: Path,
    *,
    input_dir: Path,
    output_dir: Path,
    shared_dir: Path,
    ref_dir: Path,
    res_dir: Path,
    time_limit: int,
    extra: dict[str, Path] | None = None,
    output_cap: int = OUTPUT_CAP,
    command: str | None = None,
) -> ProgramResult:
    """Run the program's command in ``program_dir``; never raises for what the program itself does.

    ``extra`` adds or overrides placeholders, e.g. ``{"ingestion_program": ..., "submission_program": ...}``.
    ``command`` is given when it does not come from the folder's metadata file (a code case's tests).
    """
    if time_limit <= 0:
        raise ValueError(f"time_limit must be a positive number of seconds, not {time_limit}")
    if command is None:
        command = load_command(program_dir)
    # The program runs inside its own folder, so a relative path would point somewhere else.
    program_dir = program_dir.absolute()
    given: dict[str, Path] = {
        "input": input_dir,
        "output": output_dir,
        "program": program_dir,
        "hidden": ref_dir,
        "shared": shared_dir,
        "tmp": output_dir,
        "predictions": res_dir,
        **(extra or {}),
    }
    substitutions = {name: path.absolute() for name, path in given.items()}
    argv = build_argv(command, substitutions)
    output_dir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="program-home-") as home,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        started = time.monotonic()
        timed_out = False
        try:
            process = subprocess.Popen(  # noqa: S603 - no shell; the command is the bundle's by design
                argv,
                cwd=program_dir,
                env=_program_env(Path(home)),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            return ProgramResult(
                returncode=127,
                stdout="",
                stderr=f"could not start {argv[0]!r}: {exc.strerror or exc}",
                timed_out=False,
                duration_s=time.monotonic() - started,
                command=argv,
            )
        try:
            returncode = process.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            returncode = process.wait()
        finally:
            # Children the program left running in the background go with it.
            _kill_group(process)
        duration = time.monotonic() - started
        return ProgramResult(
            returncode=returncode,
            stdout=_tail(out, output_cap),
            stderr=_tail(err, output_cap),
            timed_out=timed_out,
            duration_s=round(duration, 3),
            command=argv,
        )


def _number(key: object, value: object, file: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ScoringError(f"{file}: the value of {key!s} is {value!r}, not a number; write numbers only")
    try:
        number = float(value)
    except ValueError as exc:
        raise ScoringError(
            f"{file}: the value of {key!s} is {value!r}, not a number; write numbers only"
        ) from exc
    if not math.isfinite(number):
        raise ScoringError(f"{file}: the value of {key!s} is {value!r}; scores must be finite numbers")
    return number


def _read_capped(path: Path) -> str:
    if path.stat().st_size > MAX_SCORES_BYTES:
        raise ScoringError(
            f"{path.name} is larger than {MAX_SCORES_BYTES // (1024 * 1024)} MiB; write scores only"
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ScoringError(f"{path.name} is not UTF-8 text") from exc


def read_scores(output_dir: Path) -> dict[str, float]:
    """The flat ``{key: number}`` the scoring program wrote: scores.json, else scores.txt read as YAML."""
    json_path = output_dir / "scores.json"
    txt_path = output_dir / "scores.txt"
    data: object
    if json_path.is_file():
        file = "scores.json"
        try:
            data = json.loads(_read_capped(json_path))
        except json.JSONDecodeError as exc:
            raise ScoringError(
                f"scores.json is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
            ) from exc
        except RecursionError:
            raise ScoringError(f"scores.json {too_deep()}") from None
    elif txt_path.is_file():
        file = "scores.txt"
        try:
            data = yaml.safe_load(_read_capped(txt_path))
        except yaml.YAMLError as exc:
            raise ScoringError(f"scores.txt cannot be read as `key: value` lines ({exc})") from exc
        except RecursionError:
            raise ScoringError(f"scores.txt {too_deep()}") from None
    else:
        raise ScoringError(NO_SCORES)
    if not isinstance(data, dict):
        raise ScoringError(f'{file} must map each score\'s key to a number, e.g. {{"accuracy": 0.72}}')
    return {str(key): _number(key, value, file) for key, value in data.items()}
