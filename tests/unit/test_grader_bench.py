"""The bench's re-implementation of lm-eval's GSM8K grading behaves as the task file says."""

from __future__ import annotations

import sys

import pytest

from tests.bench_scripts import bench_script

grader_bench = bench_script("grader_bench")


@pytest.mark.parametrize(
    ("response", "gold", "passed"),
    [
        ("She sold 48 + 24 = 72 clips.\n#### 72", "72", True),
        ("#### 1,000", "1000", True),
        ("#### $1,250", "1250", False),  # the strict regex needs a digit or sign right after "#### "
        ("The answer is 72.", "72", False),  # no "####": the fallback "[invalid]" never matches
        ("#### 1.730", "1730", False),
    ],
)
def test_strict_match_reads_only_the_number_after_four_hashes(response: str, gold: str, passed: bool) -> None:
    assert grader_bench.strict_match(response, gold) is passed


@pytest.mark.parametrize(
    ("response", "gold", "passed"),
    [
        ("The answer is $18.", "18", True),  # "$18." loses "$" and the final "." before comparing
        ("9 apples are left, since Tom started with 15 and gave away 6.", "9", False),
        ("Cevap: 1.000.000 TL", "1000000", False),
        ("It costs 3", "3", True),  # a single digit only matches the second group
    ],
)
def test_flexible_extract_takes_the_last_number_like_token(response: str, gold: str, passed: bool) -> None:
    assert grader_bench.flexible_extract(response, gold) is passed


def test_the_bench_reports_math_verify_as_not_installed_instead_of_failing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # given math-verify cannot be imported (and the test process keeps its cores)
    monkeypatch.setitem(sys.modules, "math_verify", None)
    monkeypatch.setattr(grader_bench, "pin_to_one_core", lambda: "not pinned")
    # when the bench runs
    assert grader_bench.main(["--seconds", "0.01"]) == 0
    # then every grader has a row and math-verify's says how to install it
    table = capsys.readouterr().out
    assert "math-verify          not installed: pip install -c constraints.txt -e '.[bench]'" in table
    assert "lm-eval strict-match" in table and "template extraction alone" in table
