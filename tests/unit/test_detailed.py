"""The detailed results report: JSON for machines, a self-contained HTML page for people."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchgen.bundle.spec import Column
from benchgen.report.detailed import write_detailed_results
from benchgen.verdicts import Verdict

COLUMNS = [
    Column(title="Exact match", key="exact_match", index=1, precision=1),
    Column(title="Accuracy", key="accuracy", index=0, precision=3),
    Column(title="Hidden", key="hidden", index=2, hidden=True),
]


def verdict(case_id: str, *, passed: bool, prediction: str | None = "1", **fields: Any) -> Verdict:
    return Verdict(
        case_id=case_id,
        gold="1",
        prediction=prediction,
        passed=passed,
        answered=prediction is not None,
        score=1.0 if passed else 0.0,
        **fields,
    )


def sample() -> list[Verdict]:
    return [
        verdict("q1", passed=True, difficulty="easy", domain="algebra"),
        verdict("q2", passed=True, difficulty="hard", domain="algebra"),
        verdict("q3", passed=False, difficulty="easy", domain="geometry"),
        verdict("q4", passed=False, prediction=None, difficulty="medium", domain="geometry"),
        verdict("q5", passed=True, difficulty="easy", domain="geometry"),
    ]


def write(
    tmp_path: Path, verdicts: list[Verdict] | Iterator[Verdict], **kwargs: Any
) -> tuple[dict[str, Any], str]:
    write_detailed_results(
        verdicts,
        title=kwargs.pop("title", "GSM8K"),
        metrics=kwargs.pop("metrics", {"accuracy": 0.6, "exact_match": 0.55, "hidden": 1.0, "duration": 3.0}),
        columns=COLUMNS,
        out_dir=tmp_path,
        **kwargs,
    )
    data = json.loads((tmp_path / "detailed_results.json").read_text(encoding="utf-8"))
    return data, (tmp_path / "detailed_results.html").read_text(encoding="utf-8")


def test_summary_counts_passed_failed_and_answered(tmp_path: Path) -> None:
    data, _ = write(tmp_path, sample())
    assert data["summary"] == {"total": 5, "passed": 3, "failed": 2, "answered": 4}


def test_a_verdict_that_does_not_say_whether_it_was_answered_is_not_counted_answered(tmp_path: Path) -> None:
    # given a scoring program's verdict that leaves "answered" out, beside one that says it
    unsaid = Verdict.model_validate({"case_id": "q1", "gold": "1", "prediction": "1", "passed": True})
    data, _ = write(tmp_path, [unsaid, verdict("q2", passed=True)])

    # then the row says null (not known), and only the stated answer counts
    assert [case["answered"] for case in data["cases"]] == [None, True]
    assert data["summary"]["answered"] == 1


def test_breakdowns_count_and_rate_per_value(tmp_path: Path) -> None:
    # given five verdicts across three difficulties and two domains
    data, _ = write(tmp_path, sample())
    # then each value has its total, passed count and pass rate, difficulties in their natural order
    assert data["breakdowns"] == {
        "difficulty": {
            "easy": {"total": 3, "passed": 2, "rate": 0.6667},
            "medium": {"total": 1, "passed": 0, "rate": 0.0},
            "hard": {"total": 1, "passed": 1, "rate": 1.0},
        },
        "domain": {
            "algebra": {"total": 2, "passed": 2, "rate": 1.0},
            "geometry": {"total": 3, "passed": 1, "rate": 0.3333},
        },
    }
    assert list(data["breakdowns"]["difficulty"]) == ["easy", "medium", "hard"]


def test_route_breakdown_appears_when_verdicts_carry_routes(tmp_path: Path) -> None:
    verdicts = [verdict("a", passed=True, route="small"), verdict("b", passed=False, route="large")]
    data, _ = write(tmp_path, verdicts)
    assert data["breakdowns"] == {
        "route": {
            "large": {"total": 1, "passed": 0, "rate": 0.0},
            "small": {"total": 1, "passed": 1, "rate": 1.0},
        }
    }


def test_metric_tiles_follow_visible_columns_in_order(tmp_path: Path) -> None:
    # given metrics for two visible columns, one hidden column and one key with no column
    data, html = write(tmp_path, sample())
    # then only the visible columns become tiles, ordered by column index, with their precision
    assert data["metrics"] == [
        {"title": "Accuracy", "key": "accuracy", "value": 0.6, "precision": 3},
        {"title": "Exact match", "key": "exact_match", "value": 0.55, "precision": 1},
    ]
    assert "0.600" in html
    assert "Hidden" not in html


def test_every_case_is_listed_in_the_json(tmp_path: Path) -> None:
    data, _ = write(tmp_path, sample())
    assert [c["case_id"] for c in data["cases"]] == ["q1", "q2", "q3", "q4", "q5"]
    assert data["cases"][3] == {
        "case_id": "q4",
        "gold": "1",
        "prediction": None,
        "passed": False,
        "answered": False,
        "difficulty": "medium",
        "domain": "geometry",
        "route": None,
        "score": 0.0,
    }


def test_no_verdicts_still_gives_valid_files(tmp_path: Path) -> None:
    data, html = write(tmp_path, [])
    assert data["cases"] == []
    assert data["summary"] == {"total": 0, "passed": 0, "failed": 0, "answered": 0}
    assert "Showing 0 of 0 cases" in html


def test_html_escapes_model_output_and_titles(tmp_path: Path) -> None:
    # given a prediction and a title that carry markup
    verdicts = [verdict("x<1>", passed=False, prediction="<script>alert('pwned')</script>")]
    _, html = write(tmp_path, verdicts, title="Bench <b>bold</b>")
    # then the page shows the markup as text and runs nothing
    assert "<script" not in html
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in html
    assert "Bench &lt;b&gt;bold&lt;/b&gt;" in html
    assert "x&lt;1&gt;" in html


def test_html_is_self_contained(tmp_path: Path) -> None:
    _, html = write(tmp_path, sample())
    assert "<style>" in html
    assert "http://" not in html and "https://" not in html
    assert "<link" not in html and "<script" not in html


def test_html_has_one_bar_chart_per_breakdown(tmp_path: Path) -> None:
    _, html = write(tmp_path, sample())
    assert html.count('<div class="chart">') == 2
    assert "By difficulty" in html and "By domain" in html
    assert '<span style="width:66.7%"></span>' in html
    assert "2/3 (66.7%)" in html


def test_html_table_is_capped_and_says_so(tmp_path: Path) -> None:
    # given 5000 verdicts and the default cap of 1000 rows
    verdicts = (verdict(f"q{i}", passed=i % 2 == 0) for i in range(5000))
    data, html = write(tmp_path, verdicts)
    # then the page shows 1000 rows and points to the JSON, which keeps all 5000
    assert html.count("<tr><td>") == 1000
    assert "Showing 1000 of 5000 cases. The full list is in detailed_results.json." in html
    assert len(data["cases"]) == 5000


def test_table_limit_is_configurable(tmp_path: Path) -> None:
    _, html = write(tmp_path, sample(), table_limit=2)
    assert html.count("<tr><td>") == 2
    assert "Showing 2 of 5 cases" in html


def test_html_stays_small_when_predictions_are_huge(tmp_path: Path) -> None:
    # given 3000 verdicts each with a 20,000-character prediction
    long = "x" * 20_000
    verdicts = (verdict(f"q{i}", passed=False, prediction=long, domain=f"d{i}") for i in range(3000))
    data, html = write(tmp_path, verdicts)
    # then cells are clipped and the bar chart capped, so the page stays far below the raw size
    assert len(html.encode()) < 600_000
    assert "2950 more values are listed in detailed_results.json." in html
    assert data["cases"][0]["prediction"] == long
