"""The self-contained HTML page of the detailed results: inline CSS, CSS bars, no script, no network.

Everything that came from a bundle or a model is escaped: predictions are untrusted model output. Long
texts are clipped and long breakdowns capped, so the page stays a bounded size however many cases a run has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from benchgen.verdicts import AnyVerdict, CriterionMark, CriterionResult, is_unjudged

CELL_CHARS = 200
MAX_BARS = 50

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem;color:#1f2328;
background:#fff}
h1{font-size:1.5rem;margin:0 0 1rem}h2{font-size:1.15rem;margin:2rem 0 .75rem}
.tiles{display:flex;flex-wrap:wrap;gap:.75rem}
.tile{border:1px solid #d0d7de;border-radius:8px;padding:.75rem 1rem;min-width:8rem}
.tile .label{font-size:.8rem;color:#57606a}.tile .value{font-size:1.4rem;font-weight:600}
.chart{display:grid;grid-template-columns:minmax(6rem,14rem) 1fr 9rem;gap:.35rem .75rem;align-items:center;
max-width:60rem}
.bar{background:#eaeef2;border-radius:4px;height:1rem;overflow:hidden}
.bar span{display:block;height:100%;background:#2da44e}
.num{font-variant-numeric:tabular-nums;font-size:.85rem;color:#57606a}
table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{border-bottom:1px solid #d0d7de;padding:.35rem .5rem;text-align:left;vertical-align:top}
td{word-break:break-word;white-space:pre-wrap}
.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}.none{color:#8c959f}
.note{color:#57606a;font-size:.85rem}
"""


@dataclass(frozen=True)
class TableRow:
    case_id: str
    gold: str
    prediction: str | None
    passed: bool
    unjudged: bool = False  # the case could not be judged: neither pass nor fail
    note: str = ""  # each graded criterion's score and reason, or why the case was not judged

    @classmethod
    def of(cls, verdict: AnyVerdict) -> TableRow:
        prediction = None if verdict.prediction is None else clip(verdict.prediction)
        graded = [_graded(c) for c in verdict.criteria if c.score is not None]
        unjudged = is_unjudged(verdict)
        said = f"\nThe judge said: {verdict.detail}" if verdict.detail else ""
        note = f"{verdict.unjudged}{said}" if unjudged else "\n".join(graded)
        return cls(
            clip(verdict.case_id), clip(verdict.gold), prediction, verdict.passed, unjudged, clip(note)
        )


def _graded(criterion: CriterionResult | CriterionMark) -> str:
    """A graded criterion's score, on its scale when the verdict names it, and the grader's reason."""
    scale = "" if criterion.scale is None else f" on {criterion.scale[0]}–{criterion.scale[1]}"
    return f"{criterion.id} {criterion.score}{scale}: {criterion.reason}"


def clip(text: str, limit: int = CELL_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def tile(label: str, value: str) -> str:
    return (
        f'<div class="tile"><div class="label">{escape(label)}</div>'
        f'<div class="value">{escape(value)}</div></div>'
    )


def _metric_value(tile: dict[str, Any]) -> str:
    value = tile["value"]
    if value is None:
        return "no score"
    if isinstance(value, int | float):
        return f"{float(value):.{int(tile['precision'])}f}"
    return str(value)


def _chart(name: str, buckets: dict[str, dict[str, float]]) -> str:
    shown = list(buckets.items())[:MAX_BARS]
    lines = [f"<h2>By {escape(name)}</h2>", '<div class="chart">']
    for value, counts in shown:
        width = f"{100 * counts['rate']:.1f}"
        label = f"{int(counts['passed'])}/{int(counts['total'])} ({100 * counts['rate']:.1f}%)"
        lines.append(
            f'<div title="{escape(value)}">{escape(clip(value, 60))}</div>'
            f'<div class="bar"><span style="width:{width}%"></span></div>'
            f'<div class="num">{escape(label)}</div>'
        )
    lines.append("</div>")
    hidden = len(buckets) - len(shown)
    if hidden > 0:
        lines.append(f'<p class="note">{hidden} more values are listed in detailed_results.json.</p>')
    return "\n".join(lines)


def _table(rows: list[TableRow], total: int) -> str:
    lines = [
        "<h2>Cases</h2>",
        f'<p class="note">Showing {len(rows)} of {total} cases. '
        "The full list is in detailed_results.json.</p>",
        "<table>",
        "<thead><tr><th>Case</th><th>Gold</th><th>Prediction</th><th>Result</th></tr></thead>",
        "<tbody>",
    ]
    for row in rows:
        prediction = (
            '<span class="none">no answer</span>' if row.prediction is None else escape(row.prediction)
        )
        if row.unjudged:
            result = '<span class="none">unjudged</span>'
        else:
            result = '<span class="pass">pass</span>' if row.passed else '<span class="fail">fail</span>'
        if row.note:
            result += f"<br>{escape(row.note)}"
        lines.append(
            f"<tr><td>{escape(row.case_id)}</td><td>{escape(row.gold)}</td>"
            f"<td>{prediction}</td><td>{result}</td></tr>"
        )
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def _judge_lines(lines: Sequence[str]) -> list[str]:
    """The judge's agreement with people, beside the scores it gave (nothing for a run no judge scored)."""
    if not lines:
        return []
    return ['<ul class="judge">', *(f"<li>{escape(line)}</li>" for line in lines), "</ul>"]


def render_html(
    *,
    title: str,
    tiles: list[dict[str, Any]],
    summary: dict[str, int],
    breakdowns: dict[str, dict[str, dict[str, float]]],
    rows: list[TableRow],
    judge: Sequence[str] = (),
) -> str:
    metric_tiles = [tile(str(t["title"]), _metric_value(t)) for t in tiles]
    count_tiles = [
        tile("Cases", str(summary["total"])),
        tile("Passed", str(summary["passed"])),
        tile("Failed", str(summary["failed"])),
        tile("Answered", str(summary["answered"])),
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)} · detailed results</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
        '<div class="tiles">',
        *metric_tiles,
        *count_tiles,
        "</div>",
        *_judge_lines(judge),
        *(_chart(name, buckets) for name, buckets in breakdowns.items()),
        _table(rows, summary["total"]),
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(parts)
