"""``detailed_results.json`` and ``detailed_results.html``: summary, breakdowns and every judged case.

One pass over the verdicts: each case is written to a scratch file as it arrives, while only counters and
the first ``table_limit`` table rows stay in memory, so memory does not grow with the number of cases.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from benchgen.bundle.spec import Column
from benchgen.outputs import RunOutput
from benchgen.records.judge_calibration import JudgeAgreement
from benchgen.report.html import TableRow, render_html
from benchgen.verdicts import AnyVerdict, is_unjudged

BREAKDOWN_FIELDS = ("difficulty", "domain", "route")
TABLE_LIMIT = 1000
_FLUSH = 1 << 18

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
_ANSWERED = {True: b', "answered": true', False: b', "answered": false', None: b', "answered": null'}


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
    unjudged: int = 0  # neither passed nor failed

    def add(self, verdict: AnyVerdict) -> None:
        self.total += 1
        self.passed += verdict.passed
        self.answered += verdict.answered is True
        self.unjudged += is_unjudged(verdict)
        for name in BREAKDOWN_FIELDS:
            value = getattr(verdict, name)
            if value is None:
                continue
            bucket = self.breakdowns.setdefault(name, {}).setdefault(str(value), Bucket())
            bucket.total += 1
            bucket.passed += verdict.passed

    @classmethod
    def of(
        cls,
        *,
        total: int,
        passed: int,
        answered: int,
        groups: Mapping[str, Mapping[str, Sequence[int]]],
        unjudged: int = 0,
    ) -> Summary:
        """A summary of counts already made; ``groups``: breakdown field -> {value: (cases, passed)}."""
        breakdowns = {
            name: {value: Bucket(counts[0], counts[1]) for value, counts in values.items()}
            for name, values in groups.items()
            if values
        }
        return cls(total=total, passed=passed, answered=answered, breakdowns=breakdowns, unjudged=unjudged)

    def summary_dict(self) -> dict[str, int]:
        """The counts; ``unjudged`` only when some case could not be judged (it is no fail)."""
        counts = {
            "total": self.total,
            "passed": self.passed,
            "failed": self.total - self.passed - self.unjudged,
            "answered": self.answered,
        }
        return counts | {"unjudged": self.unjudged} if self.unjudged else counts

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


def metric_tiles(metrics: Mapping[str, float | None], columns: list[Column]) -> list[dict[str, Any]]:
    """One tile per visible leaderboard column that has a value (or null: no score), in column order."""
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


def _number(value: float) -> bytes:
    """``value`` as json.dumps writes it (``1e-05``, not msgspec's ``0.00001``)."""
    return (float.__repr__(value) if math.isfinite(value) else json.dumps(value)).encode("ascii")


def _graded(verdict: AnyVerdict) -> bytes:
    """A graded verdict's ``criteria`` (each criterion's id, passed, score, reason and scale) and an
    unjudged one's ``unjudged`` and ``detail`` (the grader's own text), as keys of its case record; nothing
    otherwise."""
    text = msgspec.json.encode
    extra = bytearray()
    graded = [c for c in verdict.criteria if c.score is not None]
    if graded:
        extra += b', "criteria": ['
        extra += b", ".join(
            b'{"id": %s, "passed": %s, "score": %d, "reason": %s%s}'
            % (
                text(c.id),
                text(c.passed),
                c.score or 0,
                text(c.reason),
                b"" if c.scale is None else b', "scale": [%d, %d]' % c.scale,
            )
            for c in graded
        )
        extra += b"]"
    if is_unjudged(verdict):
        extra += b', "unjudged": %s, "detail": %s' % (text(verdict.unjudged), text(verdict.detail))
    return bytes(extra)


def case_json(verdict: AnyVerdict) -> bytes:
    """The case's record in ``detailed_results.json``: its id, gold, prediction, passed, answered,
    difficulty, domain, route and score, and for a reasoning model's answer ``reasoning_chars`` (the length
    of the reasoning set apart from it), as ``json.dumps(record, ensure_ascii=False)`` writes them in UTF-8.
    A graded verdict adds its criteria's scores and reasons, an unjudged one why and what the grader said.

    Made without a dict or the stdlib encoder: msgspec escapes strings exactly as json.dumps does when
    it keeps non-ASCII as is."""
    text = msgspec.json.encode
    return b"".join(
        (
            b'{"case_id": ',
            text(verdict.case_id),
            b', "gold": ',
            text(verdict.gold),
            b', "prediction": ',
            text(verdict.prediction),
            b', "passed": true' if verdict.passed else b', "passed": false',
            _ANSWERED[verdict.answered],
            b', "difficulty": ',
            text(verdict.difficulty),
            b', "domain": ',
            text(verdict.domain),
            b', "route": ',
            text(verdict.route),
            b', "score": ',
            _number(verdict.score),
            _graded(verdict),
            b', "reasoning_chars": %d}' % len(verdict.reasoning)
            if isinstance(verdict.reasoning, str)
            else b"}",
        )
    )


class CaseLog:
    """Judged cases as they arrive: each case's record appended to ``path`` (records separated by
    ``,\\n``, the body of the JSON's ``cases`` array), the first ``table_limit`` table rows kept."""

    def __init__(self, path: Path, *, table_limit: int = TABLE_LIMIT) -> None:
        self.path = path
        self.count = 0
        self.rows: list[TableRow] = []
        self._table_limit = table_limit
        self._out = path.open("wb")
        self._pending = bytearray()

    def add(self, verdict: AnyVerdict) -> None:
        if self.count:
            self._pending += b",\n"
        self._pending += case_json(verdict)
        self.count += 1
        if self.count <= self._table_limit:
            self.rows.append(TableRow.of(verdict))
        if len(self._pending) >= _FLUSH:
            self._out.write(self._pending)
            self._pending.clear()

    def close(self) -> None:
        if not self._out.closed:
            self._out.write(self._pending)
            self._pending.clear()
            self._out.close()


def write_detailed(
    out_dir: Path,
    *,
    title: str,
    metrics: Mapping[str, float | None],
    columns: list[Column],
    summary: Summary,
    logs: Sequence[Path],
    rows: list[TableRow],
    judge: JudgeAgreement | None = None,
    no_score: str | None = None,
) -> dict[RunOutput, Path]:
    """Put ``detailed_results.json`` (the cases of ``logs``, in order) and ``detailed_results.html``
    (``rows``) in ``out_dir``, each replacing the old one only once it is complete; answers their paths.
    ``judge``: the agreement with people of the judge that gave the scores, shown beside them;
    ``no_score``: why the metrics without a value have none, shown in their place."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tiles = metric_tiles(metrics, columns)
    summary_dict = summary.summary_dict()
    breakdowns = summary.breakdowns_dict()
    head: dict[str, Any] = {
        "title": title,
        "metrics": tiles,
        "summary": summary_dict,
        "breakdowns": breakdowns,
    }
    if no_score is not None:
        head["no_score"] = no_score
    if judge is not None:
        head["judge"] = judge.model_dump(mode="json")
    paths = {
        output: out_dir / output.file_name for output in (RunOutput.DETAILED_JSON, RunOutput.DETAILED_HTML)
    }
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".detailed-") as scratch:
        json_part = RunOutput.DETAILED_JSON.path_in(Path(scratch))
        with json_part.open("wb") as out:
            # The head is a closed object; reopen it just before its last brace to append the cases array.
            out.write(json.dumps(head, ensure_ascii=False, indent=1)[:-2].encode("utf-8"))
            out.write(b',\n "cases": [')
            written = False
            for log in logs:
                if log.stat().st_size == 0:
                    continue
                out.write(b",\n" if written else b"\n")
                with log.open("rb") as cases:
                    shutil.copyfileobj(cases, out, 1 << 20)
                written = True
            out.write(b"\n ]\n}\n")
        html_part = RunOutput.DETAILED_HTML.path_in(Path(scratch))
        html_part.write_text(
            render_html(
                title=title,
                tiles=tiles,
                summary=summary_dict,
                breakdowns=breakdowns,
                rows=rows,
                judge=[*([no_score] if no_score else []), *(judge.summary if judge is not None else ())],
            ),
            encoding="utf-8",
        )
        os.replace(json_part, paths[RunOutput.DETAILED_JSON])
        os.replace(html_part, paths[RunOutput.DETAILED_HTML])
    return paths


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

    def add(self, verdict: AnyVerdict) -> None:
        self._log.add(verdict)
        self.summary.add(verdict)

    def write(
        self,
        *,
        title: str,
        metrics: Mapping[str, float | None],
        columns: list[Column],
        judge: JudgeAgreement | None = None,
    ) -> dict[RunOutput, Path]:
        """Put ``detailed_results.json`` and ``detailed_results.html`` in ``out_dir``; answers their paths."""
        self._log.close()
        return write_detailed(
            self.out_dir,
            title=title,
            metrics=metrics,
            columns=columns,
            summary=self.summary,
            logs=[self._log.path],
            rows=self._log.rows,
            judge=judge,
        )

    def close(self) -> None:
        self._log.close()
        self._scratch.cleanup()

    def __enter__(self) -> DetailedResults:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def write_detailed_results(
    verdicts: Iterable[AnyVerdict],
    *,
    title: str,
    metrics: Mapping[str, float | None],
    columns: list[Column],
    out_dir: Path,
    table_limit: int = TABLE_LIMIT,
) -> None:
    """Write ``out_dir/detailed_results.json`` and ``out_dir/detailed_results.html`` from one pass."""
    with DetailedResults(out_dir, table_limit=table_limit) as detailed:
        for verdict in verdicts:
            detailed.add(verdict)
        detailed.write(title=title, metrics=metrics, columns=columns)
