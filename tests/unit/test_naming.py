"""Dataset names: ``<benchmark> · <model> · <score %> · <Mon YYYY>``."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from benchgen.naming import dataset_name
from benchgen.records.runs import RunInfo, RunRecord


def test_name_joins_benchmark_model_percent_and_month() -> None:
    # given a run of GSM8K by a LoRA model scoring 0.725 in June 2026
    # when it is named
    name = dataset_name("GSM8K", "Qwen2.5-7B-LoRA", 0.725, date(2026, 6, 14))
    # then the name reads like the design's example
    assert name == "GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026"


def test_score_is_rounded_half_up_to_one_decimal() -> None:
    assert dataset_name("B", "M", 0.72549, date(2026, 1, 1)) == "B · M · 72.5% · Jan 2026"
    assert dataset_name("B", "M", 0.7255, date(2026, 1, 1)) == "B · M · 72.6% · Jan 2026"


def test_full_and_zero_scores_keep_one_decimal() -> None:
    assert dataset_name("B", "M", 1.0, date(2026, 1, 1)) == "B · M · 100.0% · Jan 2026"
    assert dataset_name("B", "M", 0.0, date(2026, 1, 1)) == "B · M · 0.0% · Jan 2026"


def test_missing_score_reads_n_a() -> None:
    assert dataset_name("B", "M", None, date(2026, 3, 1)) == "B · M · n/a · Mar 2026"


def test_every_month_uses_its_english_abbreviation() -> None:
    # given the first day of each month of 2026
    # when each is named
    months = [dataset_name("B", "M", None, date(2026, m, 1)).split(" · ")[-1] for m in range(1, 13)]
    # then the abbreviations are English whatever the locale
    expected = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    assert months == [f"{m} 2026" for m in expected]


def test_a_score_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        dataset_name("B", "M", 72.5, date(2026, 6, 1))


def test_run_info_from_a_stored_run_takes_its_finish_time() -> None:
    # given a completed run record
    record = RunRecord(
        run_id="r1",
        environment_id="gsm8k",
        environment_version="1",
        model="Qwen2.5-7B-LoRA",
        owner="u",
        overall_score=0.725,
        created_at="2026-05-31T23:00:00.000000Z",
        finished_at="2026-06-01T00:10:00.000000Z",
    )
    # when it becomes a RunInfo
    info = RunInfo.from_record(record, benchmark="GSM8K")
    # then the finish time dates it
    assert info.finished_at == datetime(2026, 6, 1, 0, 10, tzinfo=UTC)
    assert dataset_name(info.benchmark, info.model, info.overall_score, info.finished_at.date()) == (
        "GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026"
    )
