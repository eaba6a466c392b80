"""The comparison as a self-contained HTML page, in the style of the detailed results.

Inline CSS, no script, no network. Every text from a bundle or a model is escaped (responses are untrusted
model output), long texts are clipped, and each table shows at most ``table_limit`` rows: the full lists
are in ``comparison.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from benchgen.compare.report import ANSWERING_NOT_KNOWN, JSON_NAME, Answering, Comparison, Flip, Subgroup
from benchgen.report.html import CSS, clip, tile

_EXTRA_CSS = """
.verdict{font-size:1.2rem;font-weight:600;margin:.5rem 0 1rem}
.ids{font-family:ui-monospace,monospace;font-size:.85rem}
.notice{border-left:4px solid #bf8700;padding:.5rem 1rem;background:#fff8c5;max-width:60rem}
"""


def _points(value: float) -> str:
    return f"{100 * value:+.1f} pts"


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _rate(value: float | None, known: bool) -> str:
    if not known:
        return "not known"
    return "n/a (none answered)" if value is None else _percent(value)


def _answering(c: Comparison) -> str:
    """The answer rate and the accuracy among answered, before and after, beside the verdict."""

    def cells(side: Answering) -> str:
        known = side.answered is not None
        counts = f" ({side.passed_among_answered} of {side.answered})" if known else ""
        return (
            f"<td>{_rate(side.answer_rate, known)}</td>"
            f"<td>{_rate(side.accuracy_among_answered, known)}{counts}</td>"
        )

    not_known = c.answering_before.answered is None or c.answering_after.answered is None
    return "\n".join(
        [
            "<h2>Answered, and right among answered</h2>",
            "<table><thead><tr><th>run</th><th>answer rate</th><th>accuracy among answered</th></tr></thead>",
            f"<tbody><tr><td>before</td>{cells(c.answering_before)}</tr>",
            f"<tr><td>after</td>{cells(c.answering_after)}</tr></tbody></table>",
            f'<p class="note">{escape(c.answering_note)}</p>',
            *([f'<p class="note">{escape(ANSWERING_NOT_KNOWN.capitalize())}.</p>'] if not_known else []),
        ]
    )


def _pairwise(c: Comparison) -> str:
    """What the environment's judge preferred of the two answers to each case, and its position bias."""
    p = c.pairwise
    if p is None:
        return ""
    bias = p.position_bias
    judge = f"{p.judge_model or 'model id not given'} (family {p.judge_family or 'not known'})"
    rates = [
        (
            "Win rate of the trained model",
            "n/a (no pair judged)" if p.win_rate is None else _percent(p.win_rate),
        ),
        ("First-position choices", "n/a" if bias.first_rate is None else _percent(bias.first_rate)),
        (
            "Inconsistent pairs",
            "n/a" if bias.inconsistency_rate is None else _percent(bias.inconsistency_rate),
        ),
    ]
    return "\n".join(
        [
            *(f'<p class="notice">Warning: {escape(warning)}.</p>' for warning in p.warnings),
            "<h2>Which answer the judge prefers (pairwise)</h2>",
            f'<p class="note">Judge: {escape(judge)}; {p.asked_pairs} pairs asked in both orders.</p>',
            '<div class="tiles">',
            *(
                tile(label, str(value))
                for label, value in (
                    ("Trained model won", p.wins),
                    ("Base model won", p.losses),
                    ("Ties (inconsistent included)", p.ties),
                    ("Inconsistent", p.inconsistent),
                    ("Unjudged", p.unjudged),
                )
            ),
            *(tile(label, value) for label, value in rates),
            tile("Sign test p (exact)", f"{p.sign_p:.4g}"),
            "</div>",
            f"<p><b>Position bias:</b> {escape(bias.finding)}.</p>",
            f'<p class="note">Judge: {p.judge_use.answers} answers, {p.judge_use.input_tokens} input and '
            f"{p.judge_use.output_tokens} output tokens, apart from both models'.</p>",
            "<ul>",
            f"<li>Win rate: {escape(p.win_rate_rule)}.</li>",
            f"<li>Sign test: {escape(p.sign_test_rule)}.</li>",
            f"<li>Position bias: {escape(bias.rule)}.</li>",
            "</ul>",
        ]
    )


def _result(passed: bool) -> str:
    return '<span class="pass">pass</span>' if passed else '<span class="fail">fail</span>'


def _capped_note(shown: int, total: int, what: str) -> str:
    if shown >= total:
        return ""
    return f'<p class="note">Showing {shown} of {total} {escape(what)}. The full list is in {JSON_NAME}.</p>'


def _flips(title: str, flips: list[Flip], limit: int) -> str:
    lines = [f"<h2>{escape(title)} ({len(flips)})</h2>"]
    if not flips:
        return "\n".join([*lines, '<p class="note">None.</p>'])
    shown = flips[:limit]
    lines += [
        _capped_note(len(shown), len(flips), "cases"),
        "<table>",
        "<thead><tr><th>Case</th><th>Question</th><th>Gold</th><th>Before: response</th><th>Before</th>"
        "<th>After: response</th><th>After</th></tr></thead>",
        "<tbody>",
    ]
    for flip in shown:
        lines.append(
            f"<tr><td>{escape(clip(flip.case_id))}</td><td>{escape(clip(flip.question))}</td>"
            f"<td>{escape(clip(flip.gold))}</td>"
            f"<td>{escape(clip(flip.before.response))}</td>"
            f"<td>{_result(flip.before.passed)}<br>{escape(clip(flip.before.detail))}</td>"
            f"<td>{escape(clip(flip.after.response))}</td>"
            f"<td>{_result(flip.after.passed)}<br>{escape(clip(flip.after.detail))}</td></tr>"
        )
    lines += ["</tbody>", "</table>"]
    return "\n".join(line for line in lines if line)


def _subgroups(rows: list[Subgroup], limit: int) -> str:
    lines = ["<h2>By criterion and breakdown</h2>"]
    if not rows:
        return "\n".join([*lines, '<p class="note">The verdicts carry no criteria or breakdown values.</p>'])
    shown = rows[:limit]
    lines += [
        _capped_note(len(shown), len(rows), "rows"),
        "<table>",
        "<thead><tr><th>Kind</th><th>Value</th><th>Cases</th><th>Before</th><th>After</th><th>Difference</th>"
        "<th>Fixed</th><th>Broken</th><th>McNemar p</th><th>Holm-adjusted p</th></tr></thead>",
        "<tbody>",
    ]
    for row in shown:
        lines.append(
            f"<tr><td>{escape(row.kind)}</td><td>{escape(clip(row.value, 60))}</td><td>{row.cases}</td>"
            f"<td>{_percent(row.accuracy_before)}</td><td>{_percent(row.accuracy_after)}</td>"
            f"<td>{_points(row.difference)}</td><td>{row.fixed}</td><td>{row.broken}</td>"
            f"<td>{row.p_value:.4g}</td><td>{row.p_holm:.4g}</td></tr>"
        )
    lines += ["</tbody>", "</table>"]
    return "\n".join(line for line in lines if line)


def _unpaired(comparison: Comparison, limit: int) -> str:
    groups = [
        ("Judged only by the before run", comparison.only_before),
        ("Judged only by the after run", comparison.only_after),
        ("Asked for, judged by neither run", comparison.in_neither),
        ("Gold answer differs between the runs", comparison.gold_differs),
    ]
    lines = ["<h2>Cases left out of the pairing</h2>"]
    if not any(ids for _, ids in groups):
        return "\n".join([*lines, '<p class="note">None: every case asked for was judged by both runs.</p>'])
    for title, ids in groups:
        if ids:
            shown = ", ".join(escape(clip(case_id, 60)) for case_id in ids[:limit])
            more = f" and {len(ids) - limit} more (in {JSON_NAME})" if len(ids) > limit else ""
            lines.append(f'<p>{escape(title)} ({len(ids)}): <span class="ids">{shown}</span>{more}</p>')
    return "\n".join(line for line in lines if line)


def _identity(label: str, comparison: Comparison, before: bool) -> str:
    run = comparison.before if before else comparison.after
    return (
        f"<li>{escape(label)}: model <b>{escape(run.model)}</b>, run <code>{escape(run.run_id)}</code></li>"
    )


def render_comparison(
    comparison: Comparison, *, table_limit: int = 200, details: Sequence[tuple[str, str]] = ()
) -> str:
    """The page; ``details`` are further (label, value) lines under the two runs, such as who authorized
    an evaluation and which model ids were called."""
    c = comparison
    benchmark = c.after.benchmark or c.before.benchmark or "benchmark"
    title = f"{benchmark} · {c.before.model} → {c.after.model}"
    mde = "n/a" if c.minimum_detectable_effect is None else f"±{100 * c.minimum_detectable_effect:.1f} pts"
    interval = f"[{_points(c.bootstrap.low)}, {_points(c.bootstrap.high)}]"
    package = (
        []
        if c.package_id is None
        else [
            f"<li>Package <code>{escape(c.package_id)}</code>, sha256 "
            f"<code>{escape(c.package_sha256 or 'not given')}</code></li>"
        ]
    )
    trained = [
        f"<li>{label}: {escape(value)}</li>"
        for label, value in (("Training method", c.training_method), ("Reward", c.reward))
        if value is not None
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)} · comparison</title>",
        f"<style>{CSS}{_EXTRA_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="verdict">Verdict: {escape(c.verdict.value)}</p>',
        f'<p class="note">{escape(c.verdict_reason)}.</p>',
        "<ul>",
        _identity("Before", c, before=True),
        _identity("After", c, before=False),
        *package,
        *trained,
        f"<li>Cases: {escape(c.selection)}</li>",
        *(f"<li>{escape(label)}: <code>{escape(value)}</code></li>" for label, value in details),
        "</ul>",
        f'<p class="notice">{escape(c.notice)}</p>',
        '<div class="tiles">',
        tile("Paired cases", str(c.paired_cases)),
        tile("Accuracy before", _percent(c.accuracy_before)),
        tile("Accuracy after", _percent(c.accuracy_after)),
        tile("Difference", _points(c.difference)),
        tile("Fixed", str(c.fixed_count)),
        tile("Broken", str(c.broken_count)),
        tile("McNemar p (exact)", f"{c.mcnemar_p:.4g}"),
        tile(f"{c.bootstrap.level:.0%} CI of the difference", interval),
        tile("Minimum detectable effect", mde),
        tile(
            "Answer rate before",
            _rate(c.answering_before.answer_rate, c.answering_before.answered is not None),
        ),
        tile(
            "Answer rate after", _rate(c.answering_after.answer_rate, c.answering_after.answered is not None)
        ),
        "</div>",
        _answering(c),
        _pairwise(c),
        "<h2>How these numbers are made</h2>",
        "<ul>",
        *(f"<li>{escape(note)}</li>" for note in c.notes),
        f"<li>Verdict rule: {escape(c.verdict_rule)}.</li>",
        f"<li>Bootstrap: {escape(c.bootstrap.method)}; {c.bootstrap.resamples} resamples of "
        f"{c.bootstrap.source_cases} source cases, seed {c.bootstrap.seed}, "
        f"{escape(c.bootstrap.generator)}.</li>",
        f"<li>Minimum detectable effect: {escape(c.mde_rule)}.</li>",
        "</ul>",
        _flips("Fixed: failed before, passed after", c.fixed, table_limit),
        _flips("Broken: passed before, failed after", c.broken, table_limit),
        _subgroups(c.subgroups, table_limit),
        _unpaired(c, table_limit),
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(part for part in parts if part)
