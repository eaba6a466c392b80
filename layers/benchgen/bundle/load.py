"""Reading ``competition.yaml`` into a :class:`CompetitionSpec`, with messages a benchmark author can act on.

Every message names the file and the field (``competition.yaml: tasks.0.scoring_program: ...``) and says
what to change. :func:`spec_problems` collects every problem it can find; :func:`load_spec` raises the first.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from benchgen import vocabulary
from benchgen.bundle.archive import COMPETITION_FILES, competition_file, path_problem
from benchgen.bundle.spec import CompetitionSpec
from benchgen.bundle.v15 import Conversion, convert_v15, is_v15
from benchgen.errors import BundleError

TASK_PATH_FIELDS = ("scoring_program", "ingestion_program", "input_data", "reference_data")


def _known_templates() -> str:
    return ", ".join(vocabulary.TEMPLATES)


_MISSING_HINTS = {
    "title": "add `title: <name of the benchmark>`",
    "tasks": "add `tasks:` with at least one task (its scoring_program, or `template:` at the top level)",
    "leaderboards": "add `leaderboards:` with one leaderboard whose `columns` name the scores to show",
}
_UNION_TAGS = frozenset({"float", "int", "str", "bool", "none"})


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc)


def _raw_at(data: object, loc: tuple[int | str, ...]) -> object:
    current = data
    for part in loc:
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        if not (in_dict or in_list):
            return None
        current = current[part]  # type: ignore[index]
    return current


def _should(msg: str) -> str:
    return msg[len("Input ") :] if msg.startswith("Input should") else msg


def _describe(error: ErrorDetails) -> str:
    kind = error["type"]
    loc = error["loc"]
    if kind == "missing":
        hint = _MISSING_HINTS.get(_dotted(loc), "add it")
        return f"missing; {hint}"
    if loc == ("template",):
        return f"unknown template {_short(error['input'])}; known templates: {_known_templates()}"
    if kind in ("enum", "literal_error"):
        expected = error.get("ctx", {}).get("expected", "")
        return f"{_short(error['input'])} is not allowed; use {expected}"
    if kind == "value_error":
        return error["msg"].removeprefix("Value error, ")
    return f"{_should(error['msg'])} (found {_short(error['input'])})"


def _translate(errors: list[ErrorDetails], data: object, file: str) -> list[BundleError]:
    """One message per field, in the order pydantic found them."""
    by_field: dict[str, str] = {}
    union_members: dict[tuple[int | str, ...], list[str]] = {}
    for error in errors:
        loc = tuple(error["loc"])
        if loc[:3] == ("finetune", "augmentation", "connectors") and len(loc) >= 4:
            field = _dotted(loc[:4])
            found = _short(_raw_at(data, loc[:4]))
            by_field.setdefault(field, f"each connector is a pair [word, replacement]; found {found}")
            continue
        if len(loc) > 1 and loc[-1] in _UNION_TAGS:
            union_members.setdefault(loc[:-1], []).append(_should(error["msg"]).removeprefix("should be "))
            by_field.setdefault(_dotted(loc[:-1]), "")
            continue
        by_field.setdefault(_dotted(loc), _describe(error))
    for loc, options in union_members.items():
        found = _short(_raw_at(data, loc))
        by_field[_dotted(loc)] = f"should be {' or '.join(options)} (found {found})"
    return [BundleError(file, message, field=field) for field, message in by_field.items()]


def _semantic_problems(spec: CompetitionSpec, file: str) -> list[BundleError]:
    problems: list[BundleError] = []

    def add(field: str, message: str) -> None:
        problems.append(BundleError(file, message, field=field))

    if not spec.tasks:
        add("tasks", "no tasks; " + _MISSING_HINTS["tasks"])
    seen_index: dict[int, int] = {}
    for i, task in enumerate(spec.tasks):
        if task.index in seen_index:
            add(
                f"tasks.{i}.index",
                f"{task.index} is already the index of tasks.{seen_index[task.index]}; "
                "give each task its own index",
            )
        seen_index.setdefault(task.index, i)
        if task.scoring_program is None and spec.template is None:
            add(
                f"tasks.{i}.scoring_program",
                "missing; give the path of the task's scoring program, or set `template:` at the top level "
                f"to a built-in one ({_known_templates()})",
            )
        elif task.scoring_program is None and task.reference_data is None:
            add(
                f"tasks.{i}.reference_data",
                f"missing; the built-in `{spec.template}` template reads cases.jsonl from the task's "
                "reference data folder",
            )
    if not spec.phases:
        add("phases", "no phases; remove `phases:` to use one default phase, or add one")
    for i, phase in enumerate(spec.phases):
        unknown = [t for t in phase.tasks if t not in seen_index]
        if spec.tasks and unknown:
            known = ", ".join(str(t) for t in seen_index)
            add(
                f"phases.{i}.tasks",
                f"task index {unknown[0]} does not exist; known task indexes: {known}",
            )
        if phase.execution_time_limit <= 0:
            add(f"phases.{i}.execution_time_limit", "must be a positive number of seconds")
    if not spec.leaderboards:
        add("leaderboards", "no leaderboard; " + _MISSING_HINTS["leaderboards"])
    for i, board in enumerate(spec.leaderboards):
        if not board.columns:
            add(
                f"leaderboards.{i}.columns",
                "no columns; add at least one column (title, key) whose key the scoring program writes",
            )
        first_with_key: dict[str, int] = {}
        for j, column in enumerate(board.columns):
            if column.key in first_with_key:
                add(
                    f"leaderboards.{i}.columns.{j}.key",
                    f"'{column.key}' is already the key of column {first_with_key[column.key]}; "
                    "give each column its own key",
                )
            first_with_key.setdefault(column.key, j)
    return problems


def parse_spec(
    data: object, *, file: str = "competition.yaml", conversion: Conversion | None = None
) -> tuple[CompetitionSpec | None, list[BundleError]]:
    """Validate parsed YAML (version 2); the spec is None when its shape is wrong (the problems say why).
    ``conversion``: what the reader converted it from, if it did."""
    if not isinstance(data, dict):
        found = "an empty file" if data is None else f"a {type(data).__name__}"
        return None, [
            BundleError(
                file, f"must be a mapping of keys (title:, tasks:, leaderboards:, ...), found {found}"
            )
        ]
    try:
        spec = CompetitionSpec.model_validate({**data, "conversion": conversion})
    except ValidationError as exc:
        return None, _translate(exc.errors(), data, file)
    return spec, _semantic_problems(spec, file)


def resolve_in_bundle(root: Path, value: str, *, file: str, field: str) -> Path:
    """The bundle path ``value`` (relative to competition.yaml), refused when it is outside or absent."""
    if path_problem(value):
        raise BundleError(
            file, f"'{value}' points outside the bundle; use a path relative to competition.yaml", field=field
        )
    path = root.joinpath(*PurePosixPath(value.replace("\\", "/")).parts)
    if not path.exists():
        raise BundleError(
            file,
            f"'{value}' does not exist in the bundle; add it next to competition.yaml or fix the path",
            field=field,
        )
    if not path.resolve().is_relative_to(root.resolve()):
        raise BundleError(
            file,
            f"'{value}' is a link to somewhere outside the bundle; put the real files there",
            field=field,
        )
    return path


def referenced_paths(spec: CompetitionSpec) -> Iterator[tuple[str, str]]:
    """Every (field, path) that competition.yaml points at inside the bundle."""
    for i, task in enumerate(spec.tasks):
        for name in TASK_PATH_FIELDS:
            value = getattr(task, name)
            if value:
                yield f"tasks.{i}.{name}", value
    if spec.finetune and spec.finetune.pool:
        yield "finetune.pool.path", spec.finetune.pool.path


def reference_problems(spec: CompetitionSpec, root: Path, *, file: str) -> list[BundleError]:
    """A problem for every referenced path that is missing or outside the bundle."""
    problems: list[BundleError] = []
    for field, value in referenced_paths(spec):
        try:
            resolve_in_bundle(root, value, file=file, field=field)
        except BundleError as exc:
            problems.append(exc)
    return problems


def spec_problems(root: Path) -> tuple[CompetitionSpec | None, list[BundleError]]:
    """Read ``root``'s competition.yaml: the spec (None if unusable) and every problem found."""
    path = competition_file(root)
    if path is None:
        return None, [
            BundleError(root.name, f"has no {COMPETITION_FILES[0]}; add one at the top of the bundle")
        ]
    file = path.name
    # Here rather than at the top: the functions that import this module for its other names (the paths a
    # task names) would otherwise import PyYAML at every cold start without reading a bundle.
    from benchgen.bundle.yaml_file import read_yaml

    try:
        data = read_yaml(path, file=file)
    except BundleError as exc:
        return None, [exc]
    if isinstance(data, dict) and is_v15(data):
        return _converted_spec(data, root, file=file)
    spec, problems = parse_spec(data, file=file)
    if spec is not None:
        problems += reference_problems(spec, root, file=file)
    return spec, problems


def _converted_spec(
    data: dict[str, Any], root: Path, *, file: str
) -> tuple[CompetitionSpec | None, list[BundleError]]:
    """A CodaLab v1.5 file, converted as Codabench converts it; problems name the 1.5 fields."""

    def exists(value: str) -> bool:
        try:
            resolve_in_bundle(root, value, file=file, field="")
        except BundleError:
            return False
        return True

    converted = convert_v15(data, file=file, exists=exists)
    if isinstance(converted, list):
        return None, converted
    document, conversion = converted
    spec, problems = parse_spec(document, file=file, conversion=conversion)
    if spec is not None:
        problems += reference_problems(spec, root, file=file)
    return spec, [conversion.relabel(problem) for problem in problems]


def load_spec(root: Path) -> CompetitionSpec:
    """The spec of the bundle folder ``root``; raises the first problem (telling how many more there are)."""
    spec, problems = spec_problems(root)
    if problems:
        first = problems[0]
        more = len(problems) - 1
        if more:
            message = str(first).removeprefix(f"{first.file}: ")
            if first.field:
                message = message.removeprefix(f"{first.field}: ")
            raise BundleError(
                first.file,
                f"{message} (and {more} more problem{'s' if more > 1 else ''}; "
                "`benchgen bundle check` lists them all)",
                field=first.field,
            )
        raise first
    assert spec is not None
    return spec
