"""DynamoDB item writes on moto, made atomic as DynamoDB's are.

DynamoDB evaluates a write's condition and applies the write as one step: of two concurrent
``attribute_not_exists`` puts, or two ``status = Pending`` updates, exactly one succeeds. moto reads the
item, evaluates the condition and writes without a lock, so two threads can both pass the same
condition, and a duplicate S3 event could then start a run twice. While active, ``AtomicItemWrites``
serializes moto's item writes (``DynamoDBBackend`` methods, private to moto: moto is pinned).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from localcloud.patches import Patch, Patches

WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")


class AtomicItemWrites(Patches):
    """Context manager: one lock around every item write of moto's DynamoDB backend."""

    def __init__(self) -> None:
        super().__init__()
        # Reentrant: a transaction's writes may go through the single-item methods.
        self._lock = threading.RLock()

    def declare(self) -> Iterator[Patch]:
        from moto.dynamodb.models import DynamoDBBackend

        for name in WRITES:
            yield Patch(DynamoDBBackend, name, self._atomic(getattr(DynamoDBBackend, name)))

    def _atomic(self, write: Callable[..., Any]) -> Callable[..., Any]:
        lock = self._lock

        def atomic(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return write(*args, **kwargs)

        return atomic
