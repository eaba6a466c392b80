"""The math template against a careful grader, over answers phrased the way models phrase them.

``tests/data/math_answers.jsonl`` holds hand-written model answers in English and Turkish, each with
the gold value, the verdict a careful human grader gives and why. ``bench/grader_bench.py`` compares
other graders on the same file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchgen.cases import Case, Prediction
from benchgen.scoring.math import judge

CORPUS = Path(__file__).parents[1] / "data" / "math_answers.jsonl"
FIELDS = {"response", "gold", "verdict", "reason", "class", "language"}
# The forms the grading must get right: the hard classes first, then the forms every grader meets.
CLASSES = {
    "separator_evidence",
    "separator_no_evidence",
    "hedged",
    "conflicting_finals",
    "self_correction",
    "stated_first",
    "fraction",
    "thousands_dot",
    "decimal_comma",
    "unicode_minus",
    "percent",
    "boxed",
    "hashes",
    "marker",
    "currency",
    "latex",
    "last_number",
    "textual",
    "unanswered",
    "long_reasoning",
}


def _rows() -> list[dict[str, Any]]:
    with CORPUS.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


ROWS = _rows()


def test_the_corpus_covers_every_class_in_both_languages_with_a_reasoned_verdict() -> None:
    assert len(ROWS) >= 120
    assert all(set(row) == FIELDS for row in ROWS)
    assert {row["class"] for row in ROWS} == CLASSES
    assert {row["language"] for row in ROWS} == {"en", "tr"}
    assert {row["verdict"] for row in ROWS} == {"correct", "wrong"}
    assert all(row["reason"].strip() and row["response"] is not None for row in ROWS)
    for name in ("separator_evidence", "hedged", "stated_first", "fraction"):
        assert {row["language"] for row in ROWS if row["class"] == name} == {"en", "tr"}, name


@pytest.mark.parametrize(
    "row", ROWS, ids=[f"{index}-{row['class']}-{row['language']}" for index, row in enumerate(ROWS)]
)
def test_the_template_gives_the_careful_graders_verdict(row: dict[str, Any]) -> None:
    # given a model answer and its gold value
    case = Case(id="q", question="?", answer=row["gold"])
    prediction = Prediction(id="q", prediction_text=row["response"])
    # when the math template judges it
    verdict = judge(case, prediction, [])
    # then it passes exactly when the careful grader says it is correct
    assert ("correct" if verdict.passed else "wrong") == row["verdict"], row["reason"]
