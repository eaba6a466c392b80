"""Splits: a stable hash of the source case id, so every variant of a case shares one split."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from benchgen.bundle.spec import Augmentation
from benchgen.finetune.augment import AugmentSettings, augment
from benchgen.finetune.seed import Example, Source
from benchgen.finetune.split import SPLIT_RULE, Split, SplitShares, bucket, in_test_bucket, split_for


def seed(case_id: str, question: str) -> Example:
    return Example(
        example_id=f"{case_id}~00",
        case_id=case_id,
        run_id="r",
        source=Source.SEED,
        input=question,
        target="Final answer: 1",
    )


@settings(max_examples=200, deadline=None)
@given(
    case_id=st.text(min_size=1, max_size=20),
    question=st.text(min_size=1, max_size=80),
    factor=st.integers(min_value=1, max_value=10),
)
def test_variants_of_a_case_land_in_one_split(case_id: str, question: str, factor: int) -> None:
    # given a seed and its variants
    original = seed(case_id, question + " then 3 apples")
    family = [original, *augment(original, AugmentSettings.resolve(Augmentation(factor=factor), "en"))]
    # when each is placed
    splits = {split_for(example.split_key) for example in family}
    # then they all share the seed's split
    assert splits == {split_for(case_id)}


def _documented_split(key: str) -> Split:
    # The rule the manifest states, written out independently of the code under test.
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:16], 16) % 100
    return Split.TRAIN if bucket < 80 else Split.VALIDATION if bucket < 90 else Split.TEST


def test_split_of_a_case_never_changes() -> None:
    # the documented rule, for many ids, and a few pinned so a changed rule cannot pass unnoticed
    assert all(split_for(f"case-{i}") is _documented_split(f"case-{i}") for i in range(500))
    assert (split_for("gsm8k-0001"), split_for("p1")) == (Split.TRAIN, Split.VALIDATION)


def test_splits_are_about_80_10_10() -> None:
    counts = Counter(split_for(f"case-{i}") for i in range(20_000))
    assert 0.78 < counts[Split.TRAIN] / 20_000 < 0.82
    assert 0.09 < counts[Split.VALIDATION] / 20_000 < 0.11
    assert 0.09 < counts[Split.TEST] / 20_000 < 0.11


def test_pool_rows_are_placed_by_their_own_prefixed_id() -> None:
    pool = Example(example_id="pool~p1", case_id="p1", run_id="r", source=Source.POOL, input="q", target="t")
    assert pool.split_key == "pool:p1"
    assert split_for(pool.split_key) is _documented_split("pool:p1") is Split.TRAIN


def test_default_shares_state_the_rule_the_artifact_always_stated() -> None:
    assert SplitShares() == SplitShares(train=80, validation=10, test=10)
    assert SPLIT_RULE == (
        "bucket = int(sha256(source case id, UTF-8).hexdigest()[:16], 16) % 100; "
        "buckets 0-79 train, 80-89 validation, 90-99 test; pool rows hash 'pool:<row id>'"
    )


@settings(max_examples=200, deadline=None)
@given(
    key=st.text(max_size=20),
    train=st.integers(min_value=1, max_value=99),
    validation=st.integers(min_value=0, max_value=98),
)
def test_other_shares_give_train_then_validation_then_test_buckets(
    key: str, train: int, validation: int
) -> None:
    # given any valid shares
    validation = min(validation, 99 - train)
    shares = SplitShares(train=train, validation=validation, test=100 - train - validation)
    # when a key is placed, then its bucket decides, in the documented order
    position = bucket(key)
    expected = (
        Split.TRAIN if position < train else Split.VALIDATION if position < train + validation else Split.TEST
    )
    assert split_for(key, shares) is expected
    assert in_test_bucket(key, shares) is (expected is Split.TEST)


def test_shares_without_validation_are_stated_as_such() -> None:
    shares = SplitShares(train=70, validation=0, test=30)
    assert "buckets 0-69 train, no validation, 70-99 test" in shares.rule


@pytest.mark.parametrize(
    ("shares", "message"),
    [
        ({"train": 80, "validation": 10, "test": 5}, "make 95; give percentages that sum to 100"),
        ({"train": 90, "validation": 10, "test": 0}, "greater than or equal to 1"),
        ({"train": 0, "validation": 50, "test": 50}, "greater than or equal to 1"),
    ],
)
def test_shares_that_do_not_fill_the_buckets_are_refused(shares: dict[str, int], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SplitShares(**shares)
