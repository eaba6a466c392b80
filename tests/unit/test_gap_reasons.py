"""The demo's reason for each coverage gap a small example has."""

from __future__ import annotations

import json
from pathlib import Path

from benchgen.finetune.split import SplitShares
from cli.gap_reasons import WrongCases

# c2 and c14 hash into validation, c9 into test, c0, c1 and c3 into train (benchgen.finetune.split).
WRONG = {"c0": ["final-answer"], "c1": ["final-answer", "units"], "c3": ["units"], "c9": ["final-answer"]}


def test_a_small_split_is_explained_by_the_wrong_cases_that_hash_into_it() -> None:
    wrong = WrongCases(WRONG, total=20)
    reason = wrong.reason({"kind": "split_small", "subject": "validation", "message": "..."})
    assert reason == (
        "expected for this 20-case example with 4 wrong cases: 0 of them hash into validation, "
        "the split of 10% of the cases"
    )


def test_a_criterion_missing_from_a_split_is_explained_by_its_cases_per_split() -> None:
    wrong = WrongCases(WRONG, total=20)
    reason = wrong.reason({"kind": "criterion_missing_in_split", "subject": "units", "message": "..."})
    assert reason == (
        "expected for this 20-case example with 4 wrong cases: those exercising 'units' hash into "
        "train 2, validation 0, test 0"
    )


def test_a_dominating_case_is_explained_by_how_few_share_its_split() -> None:
    wrong = WrongCases({**WRONG, "c2": ["final-answer"]}, total=20)
    reason = wrong.reason({"kind": "source_dominates", "subject": "c2", "message": "..."})
    assert (
        reason
        == "expected for this 20-case example with 5 wrong cases: 1 of them hash into validation, "
        + ("so each is a large share of it")
    )


def test_a_gap_the_size_does_not_explain_gets_no_reason() -> None:
    wrong = WrongCases(WRONG, total=20)
    assert wrong.reason({"kind": "pool_outnumbers_seed", "subject": "pool", "message": "..."}) is None
    assert wrong.reason({"kind": "criterion_missing", "subject": "units", "message": "..."}) is None


def test_the_wrong_cases_are_read_from_the_run_and_the_bundle(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "\n".join(json.dumps({"id": f"c{i}", "criteria": ["units"] if i == 1 else []}) for i in range(3))
        + "\n",
        encoding="utf-8",
    )
    results = tmp_path / "detailed_results.json"
    verdicts = [{"case_id": "c0", "passed": True}, {"case_id": "c1", "passed": False}, {"case_id": "c2"}]
    results.write_text(json.dumps({"cases": verdicts}), encoding="utf-8")

    wrong = WrongCases.of_run(cases, results)

    assert wrong.total == 3
    assert wrong.wrong == {"c1": ["units"], "c2": []}


def test_the_wrong_cases_hash_into_the_splits_the_preparation_asks_for(tmp_path: Path) -> None:
    # c2 and c14 hash into validation by the default shares, and into test by 60/5/35.
    ids = ("c0", "c2", "c9", "c14")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": case_id}) + "\n" for case_id in ids), encoding="utf-8")
    results = tmp_path / "detailed_results.json"
    verdicts = [{"case_id": case_id, "passed": False} for case_id in ids]
    results.write_text(json.dumps({"cases": verdicts}), encoding="utf-8")

    wrong = WrongCases.of_run(cases, results, SplitShares(train=60, validation=5, test=35))

    assert wrong.reason({"kind": "split_small", "subject": "test", "message": "..."}) == (
        "expected for this 4-case example with 4 wrong cases: 3 of them hash into test, "
        "the split of 35% of the cases"
    )
