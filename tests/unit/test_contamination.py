"""The 13-gram contamination report between training rows and held-out case texts."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

from benchgen.training.contamination import RowText, contamination_report

HELD_QUESTION = (
    "A baker sells loaves of rye bread at the Sunday market, and every loaf weighs exactly "
    "eight hundred grams; how many loaves make forty kilograms?"
)
# The last 13 words of the held-out question ("every loaf weighs ... forty kilograms"), in other case and
# punctuation, inside an otherwise different text.
PLANTED = (
    "Warm-up: EVERY LOAF WEIGHS EXACTLY eight-hundred grams... how many loaves make Forty Kilograms? Go on."
)
CLEAN = "A farmer has 12 sheep and buys 7 more at the Sunday market; how many sheep are there now in all?"


def _rows(*texts: str) -> list[RowText]:
    return [RowText(f"r{n}~00", "train", [text]) for n, text in enumerate(texts)]


def test_a_planted_13_gram_is_reported_with_its_case() -> None:
    # given one training row that repeats 13 words of a held-out question, and one clean row
    rows = _rows(CLEAN, PLANTED)

    # when the report is made
    report = contamination_report(rows, [("h001", HELD_QUESTION), ("h002", CLEAN[:40])])

    # then the planted row overlaps that case, case and punctuation notwithstanding
    assert report.rows_checked == 2
    assert report.rows_with_overlap == 1
    assert report.overlap_ratio == 0.5
    assert report.held_out_cases_checked == 1
    assert report.held_out_cases_too_short == 1  # h002's text has fewer than 13 words
    assert report.held_out_cases_overlapped == 1
    assert [(p.row_id, p.case_id, p.shared_ngrams) for p in report.pairs] == [("r1~00", "h001", 1)]
    sample = "every loaf weighs exactly eight hundred grams how many loaves make forty kilograms"
    assert report.pairs[0].sample == sample


def test_twelve_shared_words_are_not_an_overlap() -> None:
    # "every loaf weighs exactly eight hundred grams how many loaves make" is 11 words, plus "forty" = 12
    twelve = "Every loaf weighs exactly eight hundred grams; how many loaves make forty? Twelve words shared."
    report = contamination_report(_rows(twelve), [("h001", HELD_QUESTION)])
    assert report.rows_with_overlap == 0


def test_a_clean_set_reports_no_overlap() -> None:
    rows = _rows(CLEAN, "Two trains leave a station at noon.")
    report = contamination_report(rows, [("h001", HELD_QUESTION)])
    assert (report.rows_checked, report.rows_with_overlap, report.pairs_total) == (2, 0, 0)
    assert report.overlap_ratio == 0.0
    assert report.pairs == []


def test_pairs_are_bounded_but_all_counted() -> None:
    rows = _rows(*[HELD_QUESTION] * 7)
    report = contamination_report(rows, [("h001", HELD_QUESTION), ("h002", HELD_QUESTION)], max_pairs=3)
    assert report.rows_with_overlap == 7
    assert report.pairs_total == 14  # every row overlaps both cases
    assert len(report.pairs) == 3
    assert report.summary()["pairs_total"] == 14
    assert "pairs" not in report.summary()


def test_the_training_side_streams_in_flat_memory() -> None:
    # given many training rows produced one at a time
    def rows(count: int) -> Iterator[RowText]:
        for n in range(count):
            yield RowText(f"r{n}", "train", [f"{CLEAN} Row number {n} of the generated set."])

    def peak(count: int) -> int:
        tracemalloc.start()
        report = contamination_report(rows(count), [("h001", HELD_QUESTION)])
        _, high = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert report.rows_checked == count
        return high

    # then checking twenty times as many rows does not need more memory
    small, large = peak(1_000), peak(20_000)
    assert large < small * 1.5 + 64 * 1024
