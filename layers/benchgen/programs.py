"""Running a bundle's own scoring or ingestion program the way Codabench runs it, minus the container.

The program folder's ``metadata.yaml`` (or ``metadata``) holds a ``command`` such as
``python $program/score.py $input $output``. It is split into words like a shell would, but run with no
shell; the ``$name`` placeholders become folders of the scoring layout; ``python``/``python3`` mean the
interpreter of the bundle's runtime (:mod:`benchgen.bundle.runtime`), so the program imports what that
runtime's package set has. The program runs
in a sandbox (``benchgen.sandbox``): a copy of its folders, an empty environment, no credentials, and its
whole process tree killed when it ends or passes its time limit.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Collection
from pathlib import Path

from pydantic import ConfigDict

from benchgen.bundle.runtime import MINIMAL
from benchgen.errors import BundleError, ScoringError, too_deep
from benchgen.lazy_model import LazyModel
from benchgen.sandbox.job import OUTPUT_CAP, ProgramJob, ProgramResult, Sandbox, build_argv
from benchgen.sandbox.local import LocalSandbox

__all__ = ["OUTPUT_CAP", "ProgramResult", "build_argv"]

METADATA_FILES = ("metadata.yaml", "metadata", "metadata.yml")
MAX_SCORES_BYTES = 10 * 1024 * 1024
NO_SCORES = "the scoring program wrote no scores.json (nor scores.txt) in its output folder"


# The folders a program finds under /app in Codabench's containers, and the placeholder each one is.
SCORING_APP = {"program": "program", "output": "output", "input": "input", "shared": "shared"}
INGESTION_APP = {
    "program": "program",
    "output": "output",
    "input_data": "input",
    "ingested_program": "submission_program",
    "shared": "shared",
}


class Layout(LazyModel):
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


def _nested_hint(program_dir: Path) -> str:
    """Where a zipped folder put the metadata file one level down, if it did."""
    nested = sorted({found.parent.name for name in METADATA_FILES for found in program_dir.glob(f"*/{name}")})
    if not nested:
        return ""
    return (
        f" at its top level (there is one in '{nested[0]}/': a zip is taken as it is, as Codabench takes it, "
        "so zip the contents of that folder rather than the folder)"
    )


def load_command(program_dir: Path, *, label: str | None = None) -> str:
    """The ``command`` of the program folder's metadata file."""
    name = label or program_dir.name
    metadata = next((program_dir / f for f in METADATA_FILES if (program_dir / f).is_file()), None)
    if metadata is None:
        raise BundleError(
            name,
            "has no metadata.yaml" + _nested_hint(program_dir) + "; add one with "
            "`command: python $program/<script>.py $input $output`",
        )
    file = f"{name}/{metadata.name}"
    # PyYAML comes with a program's run: the functions that import this module score most runs by a
    # template and run no program, and would otherwise import it at every cold start.
    import yaml

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
    # Split as the sandbox splits it before the run, so that registration refuses what no run could start.
    try:
        shlex.split(command)
    except ValueError as exc:
        raise BundleError(
            file,
            f"cannot be split into words ({exc}); close the quote, or escape it with a backslash",
            "command",
        ) from exc
    return command


def program_job(
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
    app: dict[str, str] | None = None,
    runtime: str = MINIMAL.name,
) -> ProgramJob:
    """The job that runs the program's command in (a copy of) ``program_dir``, with the Codabench
    placeholders naming these folders.

    ``extra`` adds or overrides placeholders, e.g. ``{"ingestion_program": ..., "submission_program": ...}``.
    ``command`` is given when it does not come from the folder's metadata file (a code case's tests).
    The program may write its output and shared folders, its input folder and its own folder, as Codabench
    mounts ``/app/input`` and ``/app/program`` read-write (a scoring program locks files in ``input/res``
    or keeps scratch files beside itself). It writes copies: what it writes to ``output_dir`` and
    ``shared_dir`` is copied back, everything else is thrown away, the user's files and the bundle
    untouched.
    ``app`` names the folders it also finds under ``/app`` (:data:`SCORING_APP`, :data:`INGESTION_APP`).
    ``runtime`` is the runtime whose ``python`` runs it (an environment's :attr:`Environment.runtime`).
    """
    if time_limit <= 0:
        raise ValueError(f"time_limit must be a positive number of seconds, not {time_limit}")
    if command is None:
        command = load_command(program_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    folders: dict[str, Path] = {
        "input": input_dir,
        "output": output_dir,
        "program": program_dir,
        "hidden": ref_dir,
        "shared": shared_dir,
        "tmp": output_dir,
        "predictions": res_dir,
        **(extra or {}),
    }
    writable = {"output", "tmp", "shared", "input", "hidden", "predictions", "program"}
    return ProgramJob(
        command=command,
        runtime=runtime,
        folders=folders,
        writable=frozenset(writable),
        collect=("output", "shared"),
        time_limit=time_limit,
        output_cap=output_cap,
        app=app or {},
    )


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
    sandbox: Sandbox | None = None,
    runtime: str = MINIMAL.name,
) -> ProgramResult:
    """Run :func:`program_job` in ``sandbox`` (the local runner when None); never raises for what the
    program does."""
    job = program_job(
        program_dir,
        input_dir=input_dir,
        output_dir=output_dir,
        shared_dir=shared_dir,
        ref_dir=ref_dir,
        res_dir=res_dir,
        time_limit=time_limit,
        extra=extra,
        output_cap=output_cap,
        command=command,
        runtime=runtime,
    )
    return (sandbox or LocalSandbox()).run(job)


def run_side_by_side(jobs: list[ProgramJob], *, sandbox: Sandbox | None = None) -> list[ProgramResult]:
    """Programs that share their ``shared`` folder, e.g. an ingestion program beside a scoring program.

    They run at the same time, as Codabench runs them, where the sandbox can keep each from the other's
    folders (the local runner as root: a uid and namespaces each). Elsewhere (the sandbox function, a
    runner without root) they run one after the other in the order given, each time-limited, each
    finding in ``shared`` what the earlier ones left there: two programs under one uid could read each
    other's folders, and the reference data must stay the scoring program's alone.
    """
    runner = sandbox or LocalSandbox()
    if isinstance(runner, LocalSandbox) and runner.runs_side_by_side:
        return runner.run_side_by_side(jobs, shared="shared")
    return [runner.run(job) for job in jobs]


def _as_number(value: object) -> float | None:
    """``value`` as a finite number, a boolean counting as 0 or 1 as Codabench stores it; else None."""
    if not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _column_number(key: str, value: object, file: str) -> float:
    number = _as_number(value)
    if number is not None:
        return number
    if isinstance(value, float):
        raise ScoringError(f"{file}: the value of {key} is {value!r}; scores must be finite numbers")
    raise ScoringError(f"{file}: the value of {key} is {value!r}, not a number; write a number or a boolean")


def _read_capped(path: Path) -> str:
    if path.stat().st_size > MAX_SCORES_BYTES:
        raise ScoringError(
            f"{path.name} is larger than {MAX_SCORES_BYTES // (1024 * 1024)} MiB; write scores only"
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ScoringError(f"{path.name} is not UTF-8 text") from exc


def read_scores(output_dir: Path, columns: Collection[str]) -> dict[str, float]:
    """The scores the scoring program wrote in scores.json, else in scores.txt read as YAML.

    As Codabench reads them: the value of each key in ``columns`` must be a number or a boolean; any other
    key is kept only when its value is one too, and otherwise ignored (a note, a nested mapping...).
    A column the program does not write is absent.
    """
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
        import yaml  # with a program's scores only, as above

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
    scores: dict[str, float] = {}
    for key, value in data.items():
        name = str(key)
        number = _column_number(name, value, file) if name in columns else _as_number(value)
        if number is not None:
            scores[name] = number
    return scores
