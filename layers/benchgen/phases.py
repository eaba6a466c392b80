"""A phase of several tasks, the way Codabench runs one: every task gets the submission, each on its own.

Codabench makes one child submission per task of the phase: the same submitted file is ingested and
scored against each task's programs and data. Each child's leaderboard values are added to the parent
submission, and its leaderboard ranks that submission by the sum of each column's values over the tasks;
a computed column is computed once, on the parent, from every value of the columns it names, all tasks
together. BenchGen does the same in one run:

- each task's outputs (prediction output, scoring output) sit in a folder ``task-<index>/`` of the run's
  zip of that name;
- each task's own values are kept in the run's breakdowns under ``task``;
- the run's value of a column is the sum over the tasks that wrote it (empty when none did), and a
  computed column is the ``avg``/``sum``/``min``/``max`` of all the tasks' values of its
  ``computation_indexes`` columns.

A phase of one task is a run exactly as before: no folders, nothing summed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchgen.bundle.archive import Budget, extract_zip
from benchgen.bundle.spec import Column, CompetitionSpec, Task
from benchgen.errors import ScoringError
from benchgen.zipwrite import zip_folder

TASK_BREAKDOWN = "task"


def task_folder(task: Task) -> str:
    """The folder of one task's files inside a multi-task run's zips."""
    return f"task-{task.index}"


def task_label(task: Task) -> str:
    """How a task is named in the run's breakdowns and messages."""
    return f"{task.index} {task.name}".strip()


def combine_zips(parts: dict[str, Path], target: Path, *, workdir: Path) -> None:
    """Write ``target`` holding each zip of ``parts`` under its folder name."""
    combined = Path(tempfile.mkdtemp(prefix="combined-", dir=workdir))
    for folder, archive in parts.items():
        extract_zip(archive, combined / folder, label=archive.name, budget=Budget())
    zip_folder(combined, target)


def split_zip(source: Path, folders: Sequence[str], *, workdir: Path) -> dict[str, Path]:
    """One zip per folder of ``source`` (a multi-task run's prediction output), each with its files at the
    root; a folder the output lacks is an error that names it."""
    extracted = Path(tempfile.mkdtemp(prefix="split-", dir=workdir))
    extract_zip(source, extracted, label=source.name, budget=Budget())
    parts: dict[str, Path] = {}
    for folder in folders:
        if not (extracted / folder).is_dir():
            raise ScoringError(
                f"the prediction output has no {folder}/ folder: a phase of several tasks keeps each "
                "task's predictions in a folder of its own; submit again to rebuild it"
            )
        parts[folder] = workdir / f"{folder}.zip"
        zip_folder(extracted / folder, parts[folder])
    return parts


def compute_column(column: Column, values: list[float]) -> float | None:
    """A computed column's value over ``values``: their avg, sum, min or max; None without any."""
    if not values:
        return None
    if column.computation == "sum":
        return sum(values)
    if column.computation == "min":
        return min(values)
    if column.computation == "max":
        return max(values)
    return sum(values) / len(values)


def merge_task_metrics(spec: CompetitionSpec, per_task: Sequence[dict[str, float]]) -> dict[str, float]:
    """The run's value of each leaderboard column, in column order, from each task's column values."""
    columns = spec.columns
    merged: dict[str, float] = {}
    for column in columns:
        if column.computation is None:
            values = [metrics[column.key] for metrics in per_task if column.key in metrics]
            if values:
                merged[column.key] = sum(values)
            continue
        named = [
            other.key
            for other in columns
            if other.computation is None and other.index in column.computation_indexes
        ]
        pooled = [metrics[key] for metrics in per_task for key in named if key in metrics]
        value = compute_column(column, pooled)
        if value is not None:
            merged[column.key] = value
    return merged
