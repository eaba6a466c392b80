"""The comparison page: self-contained, escaped, bounded, and saying what it measured for whom."""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchgen.compare.html import render_comparison
from benchgen.compare.output import write_comparison
from benchgen.compare.report import Comparison, compare_runs
from benchgen.compare.selection import PackageRef
from tests.unit.compare_inputs import AFTER, BEFORE, outcomes, scoring_output, table, verdict

HOSTILE = '<script>fetch("https://evil.example/x")</script><img src="http://evil.example/p.png">'


def _hostile_comparison(tmp_path: Path) -> Comparison:
    before = scoring_output(
        tmp_path / "b.zip",
        [verdict("case-<b>1</b>", False, raw_prediction=HOSTILE, question=HOSTILE), verdict("ok", True)],
    )
    after = scoring_output(
        tmp_path / "a.zip",
        [verdict("case-<b>1</b>", True, raw_prediction="42 " + HOSTILE), verdict("ok", True)],
    )
    package = PackageRef(package_id="pkg-<i>7</i>", sha256="ab" * 32, held_out=("case-<b>1</b>", "ok"))
    return compare_runs(
        BEFORE, before, AFTER, after, cases=list(package.held_out), package=package, resamples=50
    )


def test_model_output_shows_as_text_never_as_markup(tmp_path: Path) -> None:
    page = render_comparison(_hostile_comparison(tmp_path))

    assert "<script" not in page
    assert "<img" not in page
    assert "&lt;script&gt;fetch(&quot;https://evil.example/x&quot;)&lt;/script&gt;" in page
    assert "case-&lt;b&gt;1&lt;/b&gt;" in page
    assert "pkg-&lt;i&gt;7&lt;/i&gt;" in page


def test_the_page_shows_the_answer_rate_and_the_accuracy_among_answered(tmp_path: Path) -> None:
    # before: 3 of 4 answers read, 1 of them right; after: all 4 read, 2 right
    before = [
        verdict("a", True),
        verdict("b", False),
        verdict("c", False),
        verdict("d", False, answered=False),
    ]
    after = [verdict("a", True), verdict("b", True), verdict("c", False), verdict("d", False)]
    comparison = compare_runs(
        BEFORE,
        scoring_output(tmp_path / "b.zip", before),
        AFTER,
        scoring_output(tmp_path / "a.zip", after),
        resamples=50,
    )

    page = render_comparison(comparison)

    assert "<tr><td>before</td><td>75.0%</td><td>33.3% (1 of 3)</td></tr>" in page
    assert "<tr><td>after</td><td>100.0%</td><td>50.0% (2 of 4)</td></tr>" in page
    assert "is a gain in format, not in substance" in page


def test_rates_the_verdicts_do_not_record_show_as_not_known(tmp_path: Path) -> None:
    cases = [verdict("a", True, answered=None), verdict("b", False, answered=None)]
    comparison = compare_runs(
        BEFORE,
        scoring_output(tmp_path / "b.zip", cases),
        AFTER,
        scoring_output(tmp_path / "a.zip", cases),
        resamples=50,
    )

    page = render_comparison(comparison)

    assert "<tr><td>before</td><td>not known</td><td>not known</td></tr>" in page
    assert "Not known: the scoring did not record whether it could read each answer." in page


def test_the_page_makes_no_network_reference(tmp_path: Path) -> None:
    page = render_comparison(_hostile_comparison(tmp_path))

    # no attribute or stylesheet fetches anything; the only URLs are inside escaped model output
    assert not re.search(r"""<[^>]*\b(?:src|href|action)\s*=""", page, re.IGNORECASE)
    assert "url(" not in page
    assert "@import" not in page
    assert "<link" not in page


def test_the_page_names_both_models_the_package_and_what_training_does_not_prove(tmp_path: Path) -> None:
    page = render_comparison(_hostile_comparison(tmp_path))

    assert "model <b>base-7b</b>, run <code>run-base</code>" in page
    assert "model <b>base-7b-lora</b>, run <code>run-tuned</code>" in page
    assert "sha256 <code>" + "ab" * 32 + "</code>" in page
    assert "Training completion alone does not establish benchmark improvement" in page
    assert "Verdict: sample too small to tell" in page


def test_long_responses_are_clipped_and_long_tables_capped(tmp_path: Path) -> None:
    before, after = table(fixed=30, broken=0, same_pass=0, same_fail=0)
    comparison = compare_runs(
        BEFORE,
        scoring_output(
            tmp_path / "b.zip", [verdict(c, p, raw_prediction="x" * 5000) for c, p in before.items()]
        ),
        AFTER,
        outcomes(tmp_path / "a.zip", after),
        resamples=50,
    )

    page = render_comparison(comparison, table_limit=10)

    assert "x" * 201 not in page
    assert "x" * 200 + "…" in page
    assert "Showing 10 of 30 cases. The full list is in comparison.json." in page
    assert page.count("<tr><td>c0") == 10


def test_written_json_holds_every_case_the_page_leaves_out(tmp_path: Path) -> None:
    before, after = table(fixed=30, broken=0, same_pass=0, same_fail=0)
    comparison = compare_runs(
        BEFORE, outcomes(tmp_path / "b.zip", before), AFTER, outcomes(tmp_path / "a.zip", after), resamples=50
    )

    json_path, html_path = write_comparison(comparison, tmp_path / "out", table_limit=5)

    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert [flip["case_id"] for flip in data["fixed"]] == [f"c{i:03d}" for i in range(30)]
    assert data["verdict"] == "improved"
    assert html_path.read_text(encoding="utf-8").count("<tr><td>c0") == 5
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["comparison.html", "comparison.json"]


def test_the_page_names_the_training_method_and_the_reward_of_a_reinforcement_package(tmp_path: Path) -> None:
    before = scoring_output(tmp_path / "b.zip", [verdict("a", False), verdict("b", True)])
    after = scoring_output(tmp_path / "a.zip", [verdict("a", True), verdict("b", True)])
    package = PackageRef(
        package_id="pkg-1",
        sha256="ab" * 32,
        held_out=("a", "b"),
        method="reinforcement",
        reward="the environment's own scoring as grader.py, sha256 cd",
    )
    comparison = compare_runs(BEFORE, before, AFTER, after, cases=["a", "b"], package=package, resamples=50)

    assert (comparison.training_method, comparison.reward) == ("reinforcement", package.reward)
    page = render_comparison(comparison)
    assert "<li>Training method: reinforcement</li>" in page
    assert "<li>Reward: the environment&#x27;s own scoring as grader.py, sha256 cd</li>" in page
