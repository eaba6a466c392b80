"""CodaLab's ``competition.yaml`` version 1.5, converted to version 2 the way Codabench's importer does it.

Codabench reads a ``competition.yaml`` whose ``version`` is ``1`` or ``1.5`` (or absent) with its v1.5
unpacker. Converted here the same way:

- ``phases`` is a mapping; sorted by ``phasenumber``, each phase becomes a phase of one task of its own,
  named ``<label> Task``, with the phase's ``scoring_program``, ``ingestion_program``, ``input_data`` and
  ``reference_data`` (zips in the bundle) and ``ingestion_program_only_during_scoring``. The phase keeps
  its ``label`` as name and its ``execution_time_limit`` (Codabench's default when absent or 0). In the
  1.8 variant (a phase marked ``is_parallel_parent`` or ``parent_phasenumber``) the first phase is the
  parent and is dropped.
- ``leaderboard.columns`` (a mapping keyed by score key) sorted by ``rank`` (1 when absent): ``label``
  becomes the title, ``sort`` the sorting (``desc`` when absent), ``numeric_format`` the precision (2),
  ``hidden`` stays. Each column belongs to the leaderboard whose ``label`` its ``leaderboard.label`` names;
  the phases rank by the first. A CodaLab ``computed`` column is not carried over: it is a plain column.
- ``competition_docker_image`` is the image (Codabench's default, ``codalab/codalab-legacy:py37``, when
  absent or blank).

Where Codabench's importer refuses a v1.5 bundle (no ``html`` pages with ``terms``, a page or the
``image`` missing, no ``phases``, a phase without ``phasenumber``, ``label`` or ``start_date``, no
``leaderboard``, ``leaderboards`` or ``columns``, a leaderboard without ``label``, a column without
``leaderboard.label``), this refuses it too, naming what to add. BenchGen's own keys (``template``,
``criteria``, ``finetune``, ``runtime``) are read as in version 2.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ConfigDict, Field

from benchgen.errors import BundleError
from benchgen.lazy_model import LazyModel

SOURCE = "CodaLab competition.yaml v1.5"
V15_VERSIONS = frozenset({"1", "1.5"})
BENCHGEN_KEYS = ("template", "criteria", "finetune", "runtime")
DEFAULT_RANK = 1
DEFAULT_PRECISION = 2
# A yaml key of a phase or column, and the version 2 field name it became, where the two differ.
_PHASE_NAMES = {"name": "label", "ingestion_only_during_scoring": "ingestion_program_only_during_scoring"}
_COLUMN_NAMES = {"title": "label", "sorting": "sort", "precision": "numeric_format"}


class Origin(LazyModel):
    """Where a version 2 field came from: ``tasks.0`` from ``phases.1``, with its keys' 1.5 names."""

    model_config = ConfigDict(frozen=True)

    prefix: str
    source: str
    renames: dict[str, str] = Field(default_factory=dict)


class Conversion(LazyModel):
    """That a spec was converted, from what, what the conversion did that an author should know, and
    where each field came from (so a problem names the field the author wrote)."""

    model_config = ConfigDict(frozen=True)

    source: str = SOURCE
    notes: tuple[str, ...] = ()
    origins: tuple[Origin, ...] = ()

    def describe(self) -> str:
        """One line for the environment's record and ``bundle check``."""
        return f"converted from {self.source} as Codabench imports it: " + "; ".join(self.notes)

    def field_in_source(self, name: str) -> str:
        """The 1.5 field a version 2 field came from: ``tasks.0.scoring_program`` ->
        ``phases.1.scoring_program``; a field with no origin as it is."""
        for origin in sorted(self.origins, key=lambda o: -len(o.prefix)):
            if name == origin.prefix or name.startswith(origin.prefix + "."):
                rest = name[len(origin.prefix) + 1 :].split(".") if name != origin.prefix else []
                if rest:
                    rest[0] = origin.renames.get(rest[0], rest[0])
                return ".".join([origin.source, *rest])
        return name

    def relabel(self, problem: BundleError) -> BundleError:
        """``problem``, naming the 1.5 field instead of the version 2 one."""
        if problem.field is None:
            return problem
        message = str(problem).removeprefix(f"{problem.file}: {problem.field}: ")
        return BundleError(problem.file, message, field=self.field_in_source(problem.field))


def is_v15(data: Mapping[str, Any]) -> bool:
    """Whether Codabench would read ``data`` as version 1.5: its ``version`` says so, or it has none and
    the shape is 1.5's (``phases`` a mapping, or ``leaderboard`` without ``tasks``).

    Codabench reads every ``competition.yaml`` without ``version`` as 1.5; BenchGen keeps reading one in
    the version 2 shape as version 2.
    """
    version = data.get("version")
    if version is not None:
        return str(version) in V15_VERSIONS
    return isinstance(data.get("phases"), dict) or ("leaderboard" in data and "tasks" not in data)


class _Refusals:
    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[BundleError] = []

    def add(self, field: str | None, message: str) -> None:
        self.problems.append(BundleError(self.file, message, field=field))


def _mapping(value: object) -> dict[Any, Any] | None:
    return value if isinstance(value, dict) else None


def _start(value: object) -> datetime.date | None:
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        try:
            return datetime.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


def _check_files(data: Mapping[str, Any], exists: Callable[[str], bool], refuse: _Refusals) -> None:
    """The pages and the logo Codabench's importer reads: refused when absent, as it refuses them."""
    pages = _mapping(data.get("html"))
    if pages is None:
        refuse.add("html", "missing; add `html:` naming the competition's pages, with `terms: terms.html`")
    elif "terms" not in pages:
        refuse.add("html", "has no `terms` page; add `terms: <file>` (Codabench refuses a bundle without)")
    for title, path in (pages or {}).items():
        if not isinstance(path, str) or not exists(path):
            refuse.add(
                f"html.{title}", f"the page file {path!r} is not in the bundle; add it or fix the path"
            )
    image = data.get("image")
    if not isinstance(image, str) or not image:
        refuse.add(
            "image", "missing; add `image: logo.png` with the logo file (Codabench refuses a bundle without)"
        )
    elif not exists(image):
        refuse.add("image", f"the logo {image!r} is not in the bundle; add it or fix the path")


def _phases(data: Mapping[str, Any], refuse: _Refusals) -> list[tuple[str, dict[str, Any]]]:
    """The phases in ``phasenumber`` order, as ``(their key in the yaml, the phase)``; [] when refused."""
    raw = data.get("phases")
    phases = _mapping(raw)
    if isinstance(raw, list):
        refuse.add(
            "phases",
            "is a list, as version 2 writes phases; version 1.5 keys each phase by its number (1:, 2:, ...), "
            "or write the file as version 2 (`version: 2`, with `tasks:` and `leaderboards:`)",
        )
        return []
    if not phases:
        refuse.add("phases", "missing; add `phases:` with each phase under its number (1:, 2:, ...)")
        return []
    usable: list[tuple[str, dict[str, Any]]] = []
    for key, phase in phases.items():
        where = f"phases.{key}"
        if not isinstance(phase, dict):
            refuse.add(where, "should be a mapping (phasenumber, label, start_date, scoring_program, ...)")
            continue
        bad = False
        if not isinstance(phase.get("phasenumber"), int | float):
            refuse.add(f"{where}.phasenumber", "missing; number the phases in order (phasenumber: 1, 2, ...)")
            bad = True
        if not isinstance(phase.get("label"), str):
            refuse.add(f"{where}.label", "missing; give the phase a name (label: Development)")
            bad = True
        if _start(phase.get("start_date")) is None:
            refuse.add(
                f"{where}.start_date",
                f"missing or not a date (found {phase.get('start_date')!r}); write start_date: 2024-01-31",
            )
            bad = True
        if not bad:
            usable.append((str(key), phase))
    if refuse.problems:
        return []
    return sorted(usable, key=lambda item: item[1]["phasenumber"])


def _columns(
    data: Mapping[str, Any], refuse: _Refusals
) -> tuple[list[tuple[str, list[dict[str, Any]]]], list[str]]:
    """Each leaderboard (its yaml key and columns, first one first), and notes on what was left out."""
    board = _mapping(data.get("leaderboard"))
    if board is None:
        refuse.add("leaderboard", "missing; add `leaderboard:` with `leaderboards:` and `columns:`")
        return [], []
    boards = _mapping(board.get("leaderboards"))
    columns = _mapping(board.get("columns"))
    if not boards:
        refuse.add("leaderboard.leaderboards", "missing; declare at least one leaderboard (with its label)")
    if not columns:
        refuse.add("leaderboard.columns", "missing; add the columns, each under the score key it shows")
    if not boards or not columns:
        return [], []
    labels: dict[str, str] = {}
    for key, value in boards.items():
        label = _mapping(value) and value.get("label")
        if not isinstance(label, str):
            refuse.add(f"leaderboard.leaderboards.{key}.label", "missing; give the leaderboard a label")
        else:
            labels[str(key)] = label.lower()
    notes: list[str] = []
    usable: list[tuple[str, dict[str, Any]]] = []
    for key, value in columns.items():
        if not isinstance(value, dict):
            refuse.add(f"leaderboard.columns.{key}", "should be a mapping (leaderboard, label, rank, sort)")
        elif not isinstance(value.get("rank", DEFAULT_RANK), int | float):
            refuse.add(
                f"leaderboard.columns.{key}.rank",
                f"should be a number, the column's place (found {value.get('rank')!r})",
            )
        else:
            usable.append((str(key), value))
    ordered = sorted(usable, key=lambda item: item[1].get("rank", DEFAULT_RANK))
    per_board: dict[str, list[dict[str, Any]]] = {key: [] for key in labels}
    for index, (key, column) in enumerate(ordered):
        owner = column.get("leaderboard")
        label = owner.get("label") if isinstance(owner, dict) else None
        if not isinstance(label, str):
            refuse.add(
                f"leaderboard.columns.{key}.leaderboard",
                "missing; name the column's leaderboard (leaderboard: *RESULTS or {label: Results})",
            )
            continue
        converted = {
            "title": column.get("label", key),
            "key": key,
            "index": index,
            "sorting": column.get("sort") or "desc",
            "precision": column.get("numeric_format", DEFAULT_PRECISION),
            "hidden": column.get("hidden", False),
        }
        for board_key, board_label in labels.items():
            if label.lower() == board_label:
                per_board[board_key].append(converted)
        if "computed" in column:
            notes.append(
                f"column {key} is computed in CodaLab, which Codabench does not carry over: it shows "
                f"what the scoring program writes under {key}"
            )
    return list(per_board.items()), notes


def convert_v15(
    data: Mapping[str, Any], *, file: str, exists: Callable[[str], bool]
) -> tuple[dict[str, Any], Conversion] | list[BundleError]:
    """The version 2 document Codabench's importer would make of the 1.5 ``data`` and how it was made,
    or every reason it refuses it. ``exists(path)``: whether a path in the bundle is there."""
    refuse = _Refusals(file)
    _check_files(data, exists, refuse)
    phases = _phases(data, refuse)
    boards, column_notes = _columns(data, refuse)
    if refuse.problems:
        return refuse.problems
    notes: list[str] = []
    if any(p.get("is_parallel_parent") or p.get("parent_phasenumber") for _, p in phases):
        dropped = phases.pop(0)
        notes.append(f"phase {dropped[0]} is the parent of the 1.8 layout and was dropped")
    origins = [Origin(prefix="docker_image", source="competition_docker_image")]
    tasks: list[dict[str, Any]] = []
    new_phases: list[dict[str, Any]] = []
    for index, (key, phase) in enumerate(phases):
        task: dict[str, Any] = {
            "index": index,
            "name": f"{phase['label']} Task",
            "description": phase.get("description") or "",
            "ingestion_only_during_scoring": phase.get("ingestion_program_only_during_scoring", False),
        }
        for name in ("scoring_program", "ingestion_program", "input_data", "reference_data"):
            if phase.get(name):
                task[name] = phase[name]
        tasks.append(task)
        new_phase = {"index": index, "name": phase["label"], "description": phase.get("description") or ""}
        if phase.get("execution_time_limit"):
            new_phase["execution_time_limit"] = phase["execution_time_limit"]
        new_phases.append(new_phase | {"tasks": [index]})
        for prefix in (f"tasks.{index}", f"phases.{index}"):
            origins.append(Origin(prefix=prefix, source=f"phases.{key}", renames=_PHASE_NAMES))
    leaderboards = []
    for position, (key, columns) in enumerate(boards):
        leaderboards.append({"title": key, "key": key, "columns": columns})
        origins.append(Origin(prefix=f"leaderboards.{position}", source=f"leaderboard.leaderboards.{key}"))
        origins += [
            Origin(
                prefix=f"leaderboards.{position}.columns.{j}",
                source=f"leaderboard.columns.{column['key']}",
                renames=_COLUMN_NAMES,
            )
            for j, column in enumerate(columns)
        ]
    first_key, first_columns = boards[0]
    if not first_columns:
        return [
            BundleError(
                file,
                f"no column names leaderboard {first_key}, the one the phases rank by; give it a column "
                "(leaderboard: {label: ...} matching its label)",
                field="leaderboard.columns",
            )
        ]
    others = [key for key, columns in boards[1:] if columns]
    if others:
        notes.append(
            f"the phases rank by leaderboard {first_key}; the columns of {', '.join(others)} are not shown"
        )
    image = data.get("competition_docker_image") or None
    names = ", ".join(str(p["label"]) for _, p in phases)
    notes[:0] = [
        f"{len(phases)} phase{'s' if len(phases) != 1 else ''} ({names}), each a task of its own",
        f"leaderboard columns from leaderboard.columns ({', '.join(c['key'] for c in first_columns)})",
        f"docker_image {image}" if image else "no competition_docker_image: Codabench's default image",
    ]
    document = {
        "version": 2,
        "title": data.get("title"),
        "description": data.get("description") or "",
        "docker_image": image,
        "tasks": tasks,
        "phases": new_phases,
        "leaderboards": leaderboards,
        **{key: data[key] for key in BENCHGEN_KEYS if key in data},
    }
    return document, Conversion(notes=(*notes, *column_notes), origins=tuple(origins))
