"""The preparations table on moto: one item per id, the owner's list newest first, the way out to Failed."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.aws.pages import InvalidNextToken
from benchgen.aws.tables.preparations import PreparationsRepo
from benchgen.records.bounds import MAX_TEXT_CHARS
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.settings import Settings


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
