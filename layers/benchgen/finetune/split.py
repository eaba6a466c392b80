"""Train / validation / test by a stable hash of the source case id.

All variants of a case share their source case id, so they land in one split and a held-out case never
leaks into training through one of its rewordings. The 100 hash buckets go to train first, then
validation, then test, in the shares a :class:`SplitShares` gives (80 / 10 / 10 unless a preparation asks
for others); the run's finetune artifact always uses the default.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum

from pydantic import ConfigDict, Field, model_validator

from benchgen.lazy_model import LazyModel


class Split(StrEnum):
    TRAIN = "train"
    VALIDATION = "validation"
    TEST = "test"


SPLITS = tuple(Split)
BUCKETS = 100


class SplitShares(LazyModel):
    """How many of the 100 hash buckets each split takes; they sum to 100."""

    # Each share strict: a string or a boolean is refused, not read as one.
    model_config = ConfigDict(frozen=True)

    train: int = Field(default=80, ge=1, le=BUCKETS, strict=True)
    validation: int = Field(default=10, ge=0, le=BUCKETS, strict=True)
    # At least one bucket, so every preparation holds cases back for its evaluation.
    test: int = Field(default=10, ge=1, le=BUCKETS, strict=True)

    @model_validator(mode="after")
    def _whole(self) -> SplitShares:
        total = self.train + self.validation + self.test
        if total != BUCKETS:
            raise ValueError(
                f"split shares train {self.train} + validation {self.validation} + test {self.test} make "
                f"{total}; give percentages that sum to {BUCKETS}"
            )
        return self

    @property
    def rule(self) -> str:
        """The rule in words, as manifests state it."""
        first_test = self.train + self.validation
        validation = f"{self.train}-{first_test - 1} validation, " if self.validation else "no validation, "
        return (
            f"bucket = int(sha256(source case id, UTF-8).hexdigest()[:16], 16) % {BUCKETS}; "
            f"buckets 0-{self.train - 1} train, {validation}{first_test}-{BUCKETS - 1} test; "
            "pool rows hash 'pool:<row id>'"
        )


DEFAULT_SHARES = SplitShares.model_construct()
SPLIT_RULE = DEFAULT_SHARES.rule


def bucket(key: str) -> int:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:16], 16) % BUCKETS


def split_for(key: str, shares: SplitShares = DEFAULT_SHARES) -> Split:
    """The split of every example whose source case id is ``key``."""
    position = bucket(key)
    if position < shares.train:
        return Split.TRAIN
    if position < shares.train + shares.validation:
        return Split.VALIDATION
    return Split.TEST


def in_test_bucket(case_id: str, shares: SplitShares = DEFAULT_SHARES) -> bool:
    """Whether ``case_id`` is held out under ``shares``, whether or not any run got it wrong."""
    return split_for(case_id, shares) is Split.TEST
