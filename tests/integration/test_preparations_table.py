"""The preparations table on moto: one item per id, the owner's list newest first, the ways out of
Generating (Ready, Failed)."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.aws.tables.preparations import PreparationsRepo
from benchgen.ports.pages import InvalidNextToken
from benchgen.records.bounds import MAX_ITEMS, MAX_TEXT_CHARS
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.settings import Settings
from benchgen.training.preparation import GenerationReport


def _preparation(
    preparation_id: str, minute: int, *, owner: str = "trainer-a", **changes: Any
) -> PreparationRecord:
    fields: dict[str, Any] = {
        "preparation_id": preparation_id,
        "owner": owner,
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": "demonstration",
        "selection": "wrong_plus_augmented",
        "run_ids": ["r1"],
        "base_model": "qwen",
        "examples_key": f"preparations/{preparation_id}/examples.jsonl",
        "held_out_key": f"preparations/{preparation_id}/held_out.jsonl",
        "coverage_key": f"preparations/{preparation_id}/coverage.json",
        "created_at": f"2026-06-01T10:{minute:02d}:00.000000Z",
    }
    return PreparationRecord.model_validate({**fields, **changes})


@pytest.fixture
def preparations(aws: Settings) -> PreparationsRepo:
    return PreparationsRepo(aws.preparations_table)


def test_creating_a_preparation_twice_keeps_the_first(preparations: PreparationsRepo) -> None:
    assert preparations.create(_preparation("p1", 1))
    assert preparations.create(_preparation("p1", 2, base_model="other")) is False
    stored = preparations.get("p1")
    assert stored is not None and stored.base_model == "qwen"
    assert stored.status is PreparationStatus.GENERATING


def test_the_owners_list_is_newest_first_in_pages_and_holds_no_one_elses(
    preparations: PreparationsRepo,
) -> None:
    for minute, preparation_id in enumerate(["p1", "p2", "p3", "p4", "p5"]):
        preparations.create(_preparation(preparation_id, minute))
    preparations.create(_preparation("theirs", 9, owner="trainer-b"))
    first = preparations.list(owner="trainer-a", limit=2)
    second = preparations.list(owner="trainer-a", limit=2, next_token=first.next_token)
    last = preparations.list(owner="trainer-a", limit=2, next_token=second.next_token)
    assert [[p.preparation_id for p in page.items] for page in (first, second, last)] == [
        ["p5", "p4"],
        ["p3", "p2"],
        ["p1"],
    ]
    assert last.next_token is None
    assert [p.preparation_id for p in preparations.list(owner="trainer-b").items] == ["theirs"]


def test_a_token_from_another_listing_is_refused(preparations: PreparationsRepo) -> None:
    with pytest.raises(InvalidNextToken):
        preparations.list(owner="trainer-a", next_token="eyJydW5faWQiOiJyMSJ9")


def test_failing_moves_only_a_generating_preparation_and_bounds_its_reason(
    preparations: PreparationsRepo,
) -> None:
    preparations.create(_preparation("p1", 1))
    assert preparations.fail("p1", reason="x" * 5000, finished_at="2026-06-01T10:05:00.000000Z")
    failed = preparations.get("p1")
    assert failed is not None and failed.status is PreparationStatus.FAILED
    assert failed.failure_reason is not None and len(failed.failure_reason) == MAX_TEXT_CHARS
    assert failed.failure_reason.endswith("more characters cut]")
    # a second failure, or one for a preparation that does not exist, changes nothing
    assert preparations.fail("p1", reason="again", finished_at="2026-06-01T10:06:00.000000Z") is False
    assert preparations.fail("p-none", reason="no", finished_at="2026-06-01T10:06:00.000000Z") is False
    assert preparations.get("p-none") is None


def _report(**changes: Any) -> GenerationReport:
    fields: dict[str, Any] = {
        "state_hash": "ab" * 32,
        "example_count": 12,
        "source_cases": 3,
        "held_out_count": 2,
        "splits": {"train": 10, "validation": 1, "test": 1},
        "kinds": {"seed": 3, "augmented": 9},
        "dropped": {"the pool row repeats a held-out question": 2},
        "base_model": "qwen",
        "suggested_hyperparams": {"learning_rate": 0.0002, "epochs": 2, "method": "sft"},
    }
    return GenerationReport.model_validate({**fields, **changes})


def test_ready_records_what_generation_found_bounded_and_only_over_a_generating_preparation(
    preparations: PreparationsRepo,
) -> None:
    # given a preparation being generated, whose generation dropped rows for many reasons
    preparations.create(_preparation("p1", 1))
    report = _report(dropped={f"reason {n}": n for n in range(80)})

    # when Check records it Ready
    assert preparations.ready("p1", report=report, gap_count=3, finished_at="2026-06-01T10:05:00.000000Z")

    # then the record holds every count, its maps bounded as the record bounds them, numbers as numbers
    ready = preparations.get("p1")
    assert ready is not None and ready.status is PreparationStatus.READY
    assert (ready.state_hash, ready.example_count, ready.source_cases, ready.held_out_count) == (
        "ab" * 32,
        12,
        3,
        2,
    )
    assert (ready.splits, ready.kinds, ready.gap_count) == (report.splits, report.kinds, 3)
    assert ready.suggested_hyperparams == {"learning_rate": 0.0002, "epochs": 2, "method": "sft"}
    assert len(ready.dropped) == MAX_ITEMS
    assert ready.finished_at == "2026-06-01T10:05:00.000000Z"
    # and a Ready (or Failed, or missing) preparation is never recorded again
    assert preparations.ready("p1", report=_report(), gap_count=0, finished_at="later") is False
    assert preparations.fail("p1", reason="late", finished_at="later") is False
    assert preparations.ready("p-none", report=_report(), gap_count=0, finished_at="later") is False
    assert preparations.get("p1") == ready
