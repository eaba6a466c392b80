"""DynamoDB item writes on moto, made atomic as DynamoDB's are.

DynamoDB evaluates a write's condition and applies the write as one step: of two concurrent
``attribute_not_exists`` puts, or two ``status = Pending`` updates, exactly one succeeds. moto reads the
item, evaluates the condition and writes without a lock, so two threads can both pass the same
condition, and a duplicate S3 event could then start a run twice. While active, ``AtomicItemWrites``
serializes moto's item writes (``DynamoDBBackend`` methods, private to moto: moto is pinned).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")


class AtomicItemWrites:
    """Context manager: one lock around every item write of moto's DynamoDB backend."""

    def __init__(self) -> None:
        # Reentrant: a transaction's writes may go through the single-item methods.
        self._lock = threading.RLock()
        self._originals: dict[str, Any] = {}

    def __enter__(self) -> AtomicItemWrites:
        from moto.dynamodb.models import DynamoDBBackend

        for name in WRITES:
            self._originals[name] = DynamoDBBackend.__dict__[name]
            setattr(DynamoDBBackend, name, self._atomic(self._originals[name]))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        from moto.dynamodb.models import DynamoDBBackend

        for name, original in self._originals.items():
            setattr(DynamoDBBackend, name, original)
        self._originals.clear()

    def _atomic(self, write: Callable[..., Any]) -> Callable[..., Any]:
        lock = self._lock

        def atomic(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return write(*args, **kwargs)

        return atomic
