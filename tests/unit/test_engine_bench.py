"""What the engine bench's conclusions rest on: the share of answers equal to transformers', the accuracy
by the math template's judge, each speed's ratio to the transformers row of the same run, and the rows
of engines that are missing or answer one request at a time."""

from __future__ import annotations

import pytest

from benchgen.cases import Case
from tests.bench_scripts import bench_script

engine_bench = bench_script("engine_bench")
engines = bench_script("engines")
Row = engine_bench.Row


def test_same_share_counts_prompts_answered_with_exactly_the_baseline_text() -> None:
    baseline = ["6 × 8 = 48.\n#### 48", "The answer is 35.", "12"]
    answers = ["6 × 8 = 48.\n#### 48", "The answer is 35. ", "12"]

    assert engine_bench.same_share(answers, baseline) == pytest.approx(2 / 3)


def test_same_share_refuses_answers_to_other_prompts() -> None:
    with pytest.raises(ValueError, match="ask the same prompts"):
        engine_bench.same_share(["48"], ["48", "35"])


def test_accuracy_is_the_share_the_math_judge_passes() -> None:
    cases = [Case(id="a", question="6 times 8?", answer="48"), Case(id="b", question="11+9+15?", answer="35")]

    assert engine_bench.accuracy(cases, ["6 × 8 = 48.\n#### 48", "The total is 36."]) == 0.5


def test_end_tokens_cut_an_answer_and_max_tokens_bound_it() -> None:
    assert engines._truncated([5, 6, 2, 7], {2}, 10) == [5, 6]
    assert engines._truncated([5, 6, 7, 8], {2}, 3) == [5, 6, 7]


def test_a_batch_is_padded_on_the_left_and_masked_where_it_is_padded() -> None:
    ids, mask = engines._left_padded([[5, 6, 7], [8]], 2)

    assert ids == [[5, 6, 7], [2, 2, 8]]
    assert mask == [[1, 1, 1], [0, 0, 1]]


def _rows() -> list[object]:
    return [
        Row(
            "transformers",
            version="5.24.0",
            tokens_per_s={1: 20.0, 16: 50.0},
            first_token_s=0.040,
            peak_rss_mb=900.0,
            install_mb=1500.0,
            convert_base_s=0.0,
            convert_trained_s=0.0,
            same={1: 1.0, 16: 1.0},
            accuracy={1: 0.25, 16: 0.25},
        ),
        Row(
            "fast",
            version="1.0",
            tokens_per_s={1: 60.0, 16: 150.0},
            first_token_s=0.010,
            peak_rss_mb=400.0,
            install_mb=60.0,
            convert_base_s=3.5,
            convert_trained_s=3.25,
            same={1: 0.96, 16: 0.9375},
            accuracy={1: 0.25, 16: 0.3125},
        ),
        Row("serial", version="0.3", batched=False, tokens_per_s={1: 30.0, 16: 30.0}, first_token_s=0.02),
        Row("absent", missing="pip install absent"),
    ]


def test_table_puts_each_speed_beside_its_ratio_to_transformers_in_the_same_run() -> None:
    lines = engine_bench.table(_rows(), [1, 16]).splitlines()

    fast = next(line for line in lines if line.startswith("| fast "))
    assert "| 60.0 (x3.00) | 150.0 (x3.00) |" in fast
    assert "| 10.0 (x4.00) |" in fast  # a first token four times sooner
    assert "| 96% / 94% | 31% (+6.2 pt) |" in fast


def test_table_says_which_engine_answers_one_request_at_a_time_and_how_to_install_a_missing_one() -> None:
    lines = engine_bench.table(_rows(), [1, 16]).splitlines()

    serial = next(line for line in lines if line.startswith("| serial "))
    assert "| 30.0 (x1.50) | 30.0 (x0.60) one at a time |" in serial
    absent = next(line for line in lines if line.startswith("| absent "))
    assert "not installed: pip install absent" in absent
    assert all(line.count("|") == lines[0].count("|") for line in lines)
