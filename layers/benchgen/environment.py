"""A benchmark environment: an opened bundle, its spec, and the folders its task reads from.

``open_environment`` is what the pipeline uses (it raises the first problem); ``check_bundle`` is what an
author runs before uploading (it lists every problem it can find, including the reference cases).
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from benchgen.bundle.archive import (
    COMPETITION_FILES,
    Budget,
    Limits,
    competition_file,
    expand_part,
    open_bundle,
)
from benchgen.bundle.load import TASK_PATH_FIELDS, load_spec, resolve_in_bundle
from benchgen.bundle.runtime import RuntimeChoice, select_runtime
from benchgen.bundle.spec import CompetitionSpec, Phase, Task
from benchgen.cases import Reference, case_references
from benchgen.errors import BenchGenError, BundleError, too_deep
from benchgen.programs import load_command
from benchgen.records.judge_calibration import JudgeCalibration
from benchgen.vocabulary import TemplateName

CASES_FILE = "cases.jsonl"
MAX_CASE_PROBLEMS = 20


class PhaseError(BenchGenError):
    """The run names a phase the environment does not have."""


def phase_position(phases: Sequence[tuple[int, str]], wanted: str | None) -> int:
    """Where the phase named ``wanted`` (its name, or else its index written as digits) sits among
    ``phases`` (their ``(index, name)``, in order); the first phase when ``wanted`` is None."""
    if wanted is None or not phases:
        return 0
    for position, (_, name) in enumerate(phases):
        if name == wanted:
            return position
    for position, (index, _) in enumerate(phases):
        if wanted.strip().isdigit() and index == int(wanted):
            return position
    known = ", ".join(f"{index} ({name})" for index, name in phases)
    raise PhaseError(f"this environment has no phase {wanted!r}; name one of its phases: {known}")


class Environment:
    """An opened bundle, seen through one task of one phase (by default the first task of the first phase).

    Zipped programs and data are extracted on first use into ``workdir``; :meth:`phase_tasks` gives a view
    for each task of the phase, sharing what was extracted.
    """

    def __init__(
        self,
        root: Path,
        spec: CompetitionSpec,
        *,
        workdir: Path | None = None,
        budget: Budget | None = None,
        phase: str | None = None,
    ) -> None:
        self.root = root
        self.spec = spec
        self._workdir = workdir
        self._budget = budget or Budget()
        self._parts: dict[tuple[int, str], Path] = {}
        # Its judge's agreement with people as registration recorded it (a run's steps set it).
        self.judge_calibration: JudgeCalibration | None = None
        self.phase_position = phase_position([(p.index, p.name) for p in spec.phases], phase)
        self.task_position = self._position_of(self._phase_task_indexes()[0])

    @property
    def phase(self) -> Phase:
        return self.spec.phases[self.phase_position] if self.spec.phases else Phase()

    def _phase_task_indexes(self) -> list[int]:
        return self.phase.tasks or [self.spec.tasks[0].index]

    def _position_of(self, task_index: int) -> int:
        for position, task in enumerate(self.spec.tasks):
            if task.index == task_index:
                return position
        return 0

    def phase_tasks(self) -> list[Environment]:
        """One view per task of the phase, in the phase's order; a one-task phase gives this one."""
        indexes = self._phase_task_indexes()
        if len(indexes) == 1:
            return [self]
        views = []
        for index in indexes:
            view = copy.copy(self)
            view.task_position = self._position_of(index)
            views.append(view)
        return views

    def phase_view(self, position: int) -> Environment:
        """This environment seen through the phase at ``position`` (its first task), sharing what was
        extracted."""
        view = copy.copy(self)
        view.phase_position = position
        view.task_position = view._position_of(view._phase_task_indexes()[0])
        return view

    @property
    def file(self) -> str:
        """How competition.yaml is named in messages (``competition.yml`` when the bundle uses that)."""
        return competition_name(self.root)

    @property
    def task(self) -> Task:
        return self.spec.tasks[self.task_position]

    @property
    def template(self) -> TemplateName | None:
        """The built-in scoring template, or None when the task brings its own scoring program."""
        return self.spec.template if self.task.scoring_program is None else None

    @property
    def time_limit(self) -> int:
        """Seconds each program step may run (the phase's ``execution_time_limit``)."""
        return self.phase.execution_time_limit

    def part(self, name: str) -> Path | None:
        """The active task's ``name`` folder (scoring_program, reference_data, ...), extracted if zipped."""
        if name not in TASK_PATH_FIELDS:
            raise ValueError(f"{name!r} is not a task path; use one of {', '.join(TASK_PATH_FIELDS)}")
        value = getattr(self.task, name)
        if not value:
            return None
        key = (self.task_position, name)
        if key not in self._parts:
            field = self.spec.source_field(f"tasks.{self.task_position}.{name}")
            path = resolve_in_bundle(self.root, value, file=self.file, field=field)
            if self._workdir is None:
                self._workdir = Path(tempfile.mkdtemp(prefix="benchgen-env-"))
            self._parts[key] = expand_part(path, self._workdir / "parts", label=value, budget=self._budget)
        return self._parts[key]

    @property
    def reference_dir(self) -> Path | None:
        return self.part("reference_data")

    @property
    def input_dir(self) -> Path | None:
        return self.part("input_data")

    @property
    def scoring_program_dir(self) -> Path | None:
        return self.part("scoring_program")

    @property
    def ingestion_program_dir(self) -> Path | None:
        return self.part("ingestion_program")

    @property
    def cases_path(self) -> Path:
        """``cases.jsonl`` in the reference data; a BundleError when there is none."""
        field = f"tasks.{self.task_position}.reference_data"
        reference = self.reference_dir
        if reference is None:
            raise BundleError(self.file, "missing; the task needs reference data holding cases.jsonl", field)
        path = reference / CASES_FILE
        if not path.is_file():
            raise BundleError(
                self.file, f"'{self.task.reference_data}' has no {CASES_FILE}; add one case per line", field
            )
        return path

    @property
    def cases_file(self) -> Path | None:
        """``cases.jsonl`` in the reference data; None when there is none (a custom scoring program may
        judge without it, and then the verdicts carry the text)."""
        try:
            return self.cases_path
        except BundleError:
            return None

    def case_references(self) -> Iterator[Reference]:
        """Id, question, answer and solution of every case, streamed from ``cases.jsonl``; none without it."""
        path = self.cases_file
        if path is not None:
            yield from case_references(path)

    @property
    def pool_path(self) -> Path | None:
        """The fine-tune pool dataset named by ``finetune.pool.path`` (a file or folder in the bundle)."""
        if self.spec.finetune is None or self.spec.finetune.pool is None:
            return None
        return resolve_in_bundle(
            self.root, self.spec.finetune.pool.path, file=self.file, field="finetune.pool.path"
        )

    @property
    def runtime(self) -> RuntimeChoice:
        """The runtime its programs run in, and why; raises BundleError for a GPU image or an unknown name."""
        return select_runtime(self.spec)

    def prepare(self) -> None:
        """Extract every zipped part of the phase's tasks now, so a broken zip fails at registration, and
        choose the runtime, so a bundle no runtime can serve fails there too."""
        self.runtime  # noqa: B018 - raises for a bundle no runtime serves
        for view in self.phase_tasks():
            for name in TASK_PATH_FIELDS:
                view.part(name)


def competition_name(root: Path) -> str:
    path = competition_file(root)
    return path.name if path else COMPETITION_FILES[0]


def open_environment(
    source: Path, workdir: Path, *, limits: Limits | None = None, phase: str | None = None
) -> Environment:
    """Open a bundle (zip, folder or competition.yaml) for ``phase`` (a name or an index; the first phase
    when None); a zip is extracted safely into ``workdir``. Raises PhaseError for an unknown phase."""
    budget = Budget(limits)
    root = open_bundle(source, workdir, budget=budget)
    spec = load_spec(root)
    environment = Environment(root, spec, workdir=workdir, budget=budget, phase=phase)
    environment.prepare()
    return environment


def case_problems(path: Path, *, label: str, limit: int = MAX_CASE_PROBLEMS) -> list[str]:
    """Problems in a ``cases.jsonl`` (one JSON object with a unique string ``id`` a line), streamed."""
    problems: list[str] = []
    first_line: dict[str, int] = {}
    cases = 0
    overflow = 0

    def add(line: int, message: str) -> None:
        nonlocal overflow
        if len(problems) < limit:
            problems.append(f"{label}: line {line}: {message}")
        else:
            overflow += 1

    with path.open("rb") as stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except UnicodeDecodeError:
                add(number, "is not UTF-8 text; save the file as UTF-8")
                continue
            except json.JSONDecodeError as exc:
                add(
                    number,
                    f"is not valid JSON ({exc.msg} at column {exc.colno}); write one JSON object a line",
                )
                continue
            except RecursionError:
                add(number, too_deep())
                continue
            if not isinstance(record, dict):
                add(number, f"is a JSON {type(record).__name__}, not an object; write one object a line")
                continue
            cases += 1
            case_id = record.get("id")
            if case_id is None:
                add(number, 'has no "id"; give every case a unique id')
            elif not isinstance(case_id, str):
                add(number, f'"id" is {case_id!r}; write ids as strings, e.g. "{case_id}"')
            elif case_id in first_line:
                add(
                    number, f'duplicate id "{case_id}" (first on line {first_line[case_id]}); make ids unique'
                )
            else:
                first_line[case_id] = number
    if overflow:
        problems.append(f"{label}: {overflow} more problem{'s' if overflow > 1 else ''} not shown")
    if cases == 0 and not problems:
        problems.append(f"{label}: has no cases; write one JSON object a line")
    return problems


def task_part_problems(
    root: Path,
    spec: CompetitionSpec,
    position: int,
    *,
    file: str,
    skip: set[str],
    workdir: Path,
    budget: Budget,
) -> list[str]:
    """What is wrong inside one task's programs and data (fields in ``skip`` were already reported)."""
    problems: list[str] = []
    task = spec.tasks[position]
    for name in TASK_PATH_FIELDS:
        value = getattr(task, name)
        field = spec.source_field(f"tasks.{position}.{name}")
        if not value or field in skip:
            continue
        try:
            path = resolve_in_bundle(root, value, file=file, field=field)
            folder = expand_part(path, workdir / "parts", label=value, budget=budget)
            if name in ("scoring_program", "ingestion_program"):
                load_command(folder, label=value)
        except BundleError as exc:
            problems.append(str(exc))
            continue
        if name == "reference_data" and task.scoring_program is None and spec.template is not None:
            cases = folder / CASES_FILE
            if cases.is_file():
                problems.extend(case_problems(cases, label=f"{value.rstrip('/')}/{CASES_FILE}"))
            else:
                message = (
                    f"'{value}' has no {CASES_FILE}; "
                    f"the `{spec.template}` template reads one case a line from it"
                )
                problems.append(str(BundleError(file, message, field)))
    return problems


def time_limit_problems(spec: CompetitionSpec, *, file: str, maximum: int) -> list[str]:
    """A problem for every phase whose programs may run longer than the steps that run them can wait."""
    return [
        str(
            BundleError(
                file,
                f"{phase.execution_time_limit} s is more than the {maximum} s a program may run here "
                f"(the run steps' own time limit); lower it to {maximum} or less",
                spec.source_field(f"phases.{position}.execution_time_limit"),
            )
        )
        for position, phase in enumerate(spec.phases)
        if phase.execution_time_limit > maximum
    ]
