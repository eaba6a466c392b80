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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchgen.bundle.spec import Column
from benchgen.report.html import TableRow, render_html
from benchgen.verdicts import Verdict

JSON_NAME = "detailed_results.json"
HTML_NAME = "detailed_results.html"
BREAKDOWN_FIELDS = ("difficulty", "domain", "route")
TABLE_LIMIT = 1000

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

    @classmethod
    def of(
        cls, *, total: int, passed: int, answered: int, groups: Mapping[str, Mapping[str, Sequence[int]]]
    ) -> Summary:
        """A summary of counts already made; ``groups``: breakdown field -> {value: (cases, passed)}."""
        breakdowns = {
            name: {value: Bucket(counts[0], counts[1]) for value, counts in values.items()}
            for name, values in groups.items()
            if values
        }
        return cls(total=total, passed=passed, answered=answered, breakdowns=breakdowns)

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


class CaseLog:
    """Judged cases as they arrive: each case's record appended to ``path`` (records separated by
    ``,\\n``, the body of the JSON's ``cases`` array), the first ``table_limit`` table rows kept."""

    def __init__(self, path: Path, *, table_limit: int = TABLE_LIMIT) -> None:
        self.path = path
        self.count = 0
        self.rows: list[TableRow] = []
        self._table_limit = table_limit
        self._out = path.open("w", encoding="utf-8")

    def add(self, verdict: Verdict) -> None:
        if self.count:
            self._out.write(",\n")
        self._out.write(json.dumps(case_record(verdict), ensure_ascii=False))
        self.count += 1
        if len(self.rows) < self._table_limit:
            self.rows.append(TableRow.of(verdict))

    def close(self) -> None:
        self._out.close()


def write_detailed(
    out_dir: Path,
    *,
    title: str,
    metrics: dict[str, float],
    columns: list[Column],
    summary: Summary,
    logs: Sequence[Path],
    rows: list[TableRow],
) -> None:
    """Put ``detailed_results.json`` (the cases of ``logs``, in order) and ``detailed_results.html``
    (``rows``) in ``out_dir``, each replacing the old one only once it is complete."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tiles = metric_tiles(metrics, columns)
    summary_dict = summary.summary_dict()
    breakdowns = summary.breakdowns_dict()
    head = {"title": title, "metrics": tiles, "summary": summary_dict, "breakdowns": breakdowns}
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".detailed-") as scratch:
        json_part = Path(scratch) / JSON_NAME
        with json_part.open("w", encoding="utf-8") as out:
            # The head is a closed object; reopen it just before its last brace to append the cases array.
            out.write(json.dumps(head, ensure_ascii=False, indent=1)[:-2])
            out.write(',\n "cases": [')
            written = False
            for log in logs:
                with log.open(encoding="utf-8") as cases:
                    if not cases.read(1):
                        continue
                    cases.seek(0)
                    out.write(",\n" if written else "\n")
                    shutil.copyfileobj(cases, out)
                    written = True
            out.write("\n ]\n}\n")
        html_part = Path(scratch) / HTML_NAME
        html_part.write_text(
            render_html(title=title, tiles=tiles, summary=summary_dict, breakdowns=breakdowns, rows=rows),
            encoding="utf-8",
        )
        os.replace(json_part, out_dir / JSON_NAME)
        os.replace(html_part, out_dir / HTML_NAME)


class DetailedResults:
    """Judged cases taken one at a time, then written with the run's metrics by :meth:`write`.

    Lets the scorer feed verdicts as it judges them; the metrics are only known once every case is in.
    """

    def __init__(self, out_dir: Path, *, table_limit: int = TABLE_LIMIT) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir = out_dir
        self.summary = Summary()
        self._scratch = tempfile.TemporaryDirectory(dir=out_dir, prefix=".detailed-")
        self._log = CaseLog(Path(self._scratch.name) / "cases.part", table_limit=table_limit)

    def add(self, verdict: Verdict) -> None:
        self._log.add(verdict)
        self.summary.add(verdict)

    def write(self, *, title: str, metrics: dict[str, float], columns: list[Column]) -> None:
        """Put ``detailed_results.json`` and ``detailed_results.html`` in ``out_dir``."""
        self._log.close()
        write_detailed(
            self.out_dir,
            title=title,
            metrics=metrics,
            columns=columns,
            summary=self.summary,
            logs=[self._log.path],
            rows=self._log.rows,
        )

    def close(self) -> None:
        self._log.close()
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
    table_limit: int = TABLE_LIMIT,
) -> None:
    """Write ``out_dir/detailed_results.json`` and ``out_dir/detailed_results.html`` from one pass."""
    with DetailedResults(out_dir, table_limit=table_limit) as detailed:
        for verdict in verdicts:
            detailed.add(verdict)
        detailed.write(title=title, metrics=metrics, columns=columns)
