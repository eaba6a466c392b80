"""What scoring reports: the scores matched against the leaderboard columns, and ``scores.json``."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from benchgen.bundle.spec import Column, CompetitionSpec
from benchgen.errors import ScoringError
from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput
from benchgen.phases import compute_column
from benchgen.records.programs import ProgramOutcome

if TYPE_CHECKING:
    from benchgen.scoring.templates import Aggregator


class ScoreReport(LazyModel):
    # The run outputs scoring wrote (scores, scoring output, detailed results; the log when a program ran).
    files: dict[RunOutput, Path]
    scores: Mapping[str, float | None]  # None: a metric with nothing to be computed over (``no_score``)
    metrics: dict[str, float]  # leaderboard columns only, in column order
    other_metrics: dict[str, float]
    overall_score: float | None
    no_score: str | None = None  # why the metrics without a value have none
    total: int = 0
    passed: int = 0
    answered: int = 0
    unjudged: int = 0  # cases a judge could not judge: neither passed nor failed
    breakdowns: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    logs: dict[str, str] = Field(default_factory=dict)  # stdout / stderr of a scoring program
    programs: list[ProgramOutcome] = Field(default_factory=list)  # each program that ran, and how it ended
    has_verdicts: bool = False
    warnings: list[str] = Field(default_factory=list)  # what the run should say went wrong, yet was scored

    @classmethod
    def tallied(
        cls,
        spec: CompetitionSpec,
        *,
        files: dict[RunOutput, Path],
        metrics: dict[str, float],
        other: dict[str, float],
        tally: Aggregator,
        unscored: Collection[str] = (),
        **rest: Any,
    ) -> ScoreReport:
        """The report of `metrics` and `other` (as ``match_columns`` split them), the `unscored` metrics
        without a value, and what `tally` counted."""
        return cls(
            files=files,
            scores=ordered_scores(metrics, other, unscored=unscored),
            metrics=metrics,
            other_metrics=other,
            overall_score=metrics.get(spec.primary_column.key),
            no_score=tally.no_score(),
            total=tally.total,
            passed=tally.passed,
            answered=tally.answered,
            unjudged=tally.unjudged,
            breakdowns=tally.breakdowns(),
            **rest,
        )

    def counts(self) -> dict[str, int]:
        """What scoring counted, under the names a run records its counts by; ``unjudged`` only when some
        case could not be judged (it is no fail)."""
        counts = {"total": self.total, "passed": self.passed, "answered": self.answered}
        return counts | {"unjudged": self.unjudged} if self.unjudged else counts


def _computed(column: Column, by_index: dict[int, float]) -> float | None:
    values = [by_index[index] for index in column.computation_indexes if index in by_index]
    if len(values) != len(column.computation_indexes):
        return None
    return compute_column(column, values)


def match_columns(
    spec: CompetitionSpec, scores: Mapping[str, float | None]
) -> tuple[dict[str, float], dict[str, float]]:
    """(values per leaderboard column, in column order; the other scores). A score without a value (None)
    is in neither.

    A computed column is filled from the columns of its ``computation_indexes``, as Codabench's leaderboard
    does, whatever the scores hold under its key. A column left without a value is absent: it stays empty.
    """
    columns = spec.columns
    by_index = {
        column.index: value
        for column in columns
        if column.computation is None and (value := scores.get(column.key)) is not None
    }
    metrics: dict[str, float] = {}
    for column in columns:
        value = scores.get(column.key) if column.computation is None else _computed(column, by_index)
        if value is not None:
            metrics[column.key] = value
    keys = {column.key for column in columns}
    other = {key: value for key, value in sorted(scores.items()) if key not in keys and value is not None}
    return metrics, other


def require_columns(
    spec: CompetitionSpec, metrics: dict[str, float], scores: Mapping[str, float | None]
) -> None:
    """A column the built-in template leaves empty would be empty on every run: its key is wrong. (A
    column whose metric the template reported without a value is empty on this run only.)"""
    missing = [
        column.key
        for column in spec.columns
        if column.key not in metrics and (column.key not in scores or scores[column.key] is not None)
    ]
    if missing:
        reported = ", ".join(sorted(scores)) or "nothing"
        raise ScoringError(
            f"scores.json has no value for the leaderboard column(s) {', '.join(missing)} "
            f"(it reported: {reported}); make the column keys match the scores"
        )


def ordered_scores(
    metrics: dict[str, float], other: dict[str, float], *, unscored: Collection[str] = ()
) -> dict[str, float | None]:
    """The scores in column order, then the others; each of ``unscored`` with no value of its own null."""
    return {**dict.fromkeys(unscored), **metrics, **other}


def write_scores(out_dir: Path, scores: Mapping[str, float | None]) -> Path:
    """Write ``scores.json`` in ``out_dir``; answers its path."""
    path = RunOutput.SCORES.path_in(out_dir)
    path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    return path
