"""Train / validation / test by a stable hash of the source case id.

All variants of a case share their source case id, so they land in one split and a held-out case never
leaks into training through one of its rewordings.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum


class Split(StrEnum):
    TRAIN = "train"
    VALIDATION = "validation"
    TEST = "test"


SPLITS = tuple(Split)
BUCKETS = 100
TRAIN_BUCKETS = 80
VALIDATION_BUCKETS = 10
SPLIT_RULE = (
    "bucket = int(sha256(source case id, UTF-8).hexdigest()[:16], 16) % 100; "
    "buckets 0-79 train, 80-89 validation, 90-99 test; pool rows hash 'pool:<row id>'"
)


def bucket(key: str) -> int:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:16], 16) % BUCKETS


def split_for(key: str) -> Split:
    """The split of every example whose source case id is ``key``."""
    position = bucket(key)
    if position < TRAIN_BUCKETS:
        return Split.TRAIN
    if position < TRAIN_BUCKETS + VALIDATION_BUCKETS:
        return Split.VALIDATION
    return Split.TEST
