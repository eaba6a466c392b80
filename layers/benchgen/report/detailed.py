"""``detailed_results.json`` and ``detailed_results.html``: summary, breakdowns and every judged case.

One pass over the verdicts: each case is written to a scratch file as it arrives, while only counters and
the first ``table_limit`` table rows stay in memory, so memory does not grow with the number of cases.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchgen.bundle.spec import Column
from benchgen.report.html import TableRow, render_html
from benchgen.verdicts import Verdict

JSON_NAME = "detailed_results.json"
HTML_NAME = "detailed_results.html"
BREAKDOWN_FIELDS = ("difficulty", "domain", "route")

_DIFFICULTY_ORDER = {
    "trivial": 0,
    "easy": 1,
    "medium": 2,
    "moderate": 2,
    "hard": 3,
    "very hard": 4,
    "expert": 5,
}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class Bucket:
    total: int = 0
    passed: int = 0

    def as_dict(self) -> dict[str, float]:
        return {"total": self.total, "passed": self.passed, "rate": _rate(self.passed, self.total)}


@dataclass
class Summary:
    total: int = 0
    passed: int = 0
    answered: int = 0
    breakdowns: dict[str, dict[str, Bucket]] = field(default_factory=dict)

    def add(self, verdict: Verdict) -> None:
        self.total += 1
        self.passed += verdict.passed
        self.answered += verdict.answered
        for name in BREAKDOWN_FIELDS:
            value = getattr(verdict, name)
            if value is None:
                continue
            bucket = self.breakdowns.setdefault(name, {}).setdefault(str(value), Bucket())
            bucket.total += 1
            bucket.passed += verdict.passed

    def summary_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "passed": self.passed,
            "failed": self.total - self.passed,
            "answered": self.answered,
        }

    def breakdowns_dict(self) -> dict[str, dict[str, dict[str, float]]]:
        return {
            name: {value: buckets[value].as_dict() for value in sorted(buckets, key=_value_order)}
            for name, buckets in ((n, self.breakdowns[n]) for n in BREAKDOWN_FIELDS if n in self.breakdowns)
        }


def _rate(passed: int, total: int) -> float:
    return round(passed / total, 4) if total else 0.0


def _value_order(value: str) -> tuple[int, float, str]:
    """Difficulty words in their natural order, then numbers by value, then everything else by name."""
    known = _DIFFICULTY_ORDER.get(value.strip().lower())
    if known is not None:
        return (0, float(known), value)
    if _NUMBER.fullmatch(value.strip()):
        return (1, float(value), value)
    return (2, 0.0, value)


def metric_tiles(metrics: dict[str, float], columns: list[Column]) -> list[dict[str, Any]]:
    """One tile per visible leaderboard column that has a value, in column order."""
    return [
        {
            "title": column.title,
            "key": column.key,
            "value": metrics[column.key],
            "precision": column.precision,
        }
        for column in sorted(columns, key=lambda c: c.index)
        if not column.hidden and column.key in metrics
    ]


def case_record(verdict: Verdict) -> dict[str, Any]:
    return {
        "case_id": verdict.case_id,
        "gold": verdict.gold,
        "prediction": verdict.prediction,
        "passed": verdict.passed,
        "answered": verdict.answered,
        "difficulty": verdict.difficulty,
        "domain": verdict.domain,
        "route": verdict.route,
        "score": verdict.score,
    }


class DetailedResults:
    """Judged cases taken one at a time, then written with the run's metrics by :meth:`write`.

    Lets the scorer feed verdicts as it judges them; the metrics are only known once every case is in.
    """

    def __init__(self, out_dir: Path, *, table_limit: int = 1000) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir = out_dir
        self.summary = Summary()
        self._table_limit = table_limit
        self._table: list[TableRow] = []
        self._scratch = tempfile.TemporaryDirectory(dir=out_dir, prefix=".detailed-")
        self._cases_path = Path(self._scratch.name) / "cases.part"
        self._cases = self._cases_path.open("w", encoding="utf-8")

    def add(self, verdict: Verdict) -> None:
        self._cases.write(",\n" if self.summary.total else "\n")
        self._cases.write(json.dumps(case_record(verdict), ensure_ascii=False))
        self.summary.add(verdict)
        if len(self._table) < self._table_limit:
            self._table.append(TableRow.of(verdict))

    def write(self, *, title: str, metrics: dict[str, float], columns: list[Column]) -> None:
        """Put ``detailed_results.json`` and ``detailed_results.html`` in ``out_dir``."""
        self._cases.close()
        scratch = Path(self._scratch.name)
        tiles = metric_tiles(metrics, columns)
        summary = self.summary.summary_dict()
        breakdowns = self.summary.breakdowns_dict()
        head = {"title": title, "metrics": tiles, "summary": summary, "breakdowns": breakdowns}
        json_part = scratch / JSON_NAME
        with json_part.open("w", encoding="utf-8") as out:
            # The head is a closed object; reopen it just before its last brace to append the cases array.
            out.write(json.dumps(head, ensure_ascii=False, indent=1)[:-2])
            out.write(',\n "cases": [')
            with self._cases_path.open(encoding="utf-8") as cases:
                shutil.copyfileobj(cases, out)
            out.write("\n ]\n}\n")
        html_part = scratch / HTML_NAME
        html_part.write_text(
            render_html(
                title=title,
                tiles=tiles,
                summary=summary,
                breakdowns=breakdowns,
                rows=self._table,
            ),
            encoding="utf-8",
        )
        os.replace(json_part, self.out_dir / JSON_NAME)
        os.replace(html_part, self.out_dir / HTML_NAME)

    def close(self) -> None:
        self._cases.close()
        self._scratch.cleanup()

    def __enter__(self) -> DetailedResults:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def write_detailed_results(
    verdicts: Iterable[Verdict],
    *,
    title: str,
    metrics: dict[str, float],
    columns: list[Column],
    out_dir: Path,
    table_limit: int = 1000,
) -> None:
    """Write ``out_dir/detailed_results.json`` and ``out_dir/detailed_results.html`` from one pass."""
    with DetailedResults(out_dir, table_limit=table_limit) as detailed:
        for verdict in verdicts:
            detailed.add(verdict)
        detailed.write(title=title, metrics=metrics, columns=columns)
