"""Splits: a stable hash of the source case id, so every variant of a case shares one split."""

from __future__ import annotations

import hashlib
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.bundle.spec import Augmentation
from benchgen.finetune.augment import Settings, augment
from benchgen.finetune.seed import Example, Source
from benchgen.finetune.split import Split, split_for


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
    family = [original, *augment(original, Settings.resolve(Augmentation(factor=factor), "en"))]
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
