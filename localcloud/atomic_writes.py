"""DynamoDB requests on moto, each taken whole, as DynamoDB takes an item's writes one after another.

DynamoDB evaluates a write's condition and applies the write as one step: of two concurrent
``attribute_not_exists`` puts, or two ``status = Pending`` updates, exactly one succeeds. moto reads the
item, evaluates the condition and writes without a lock, so two threads can both pass the same
condition, and a duplicate S3 event could then start a run twice. moto's request handler also copies an
item (``update_item`` deep-copies it first) outside any lock, so a write adding a key to one of its maps
at that moment fails the other request with ``dictionary changed size during iteration``: many shards of
one live run reporting their counts to the run's record did. While active, ``AtomicItemWrites`` takes one
request at a time (``DynamoHandler.call_action``, private to moto: moto is pinned).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from localcloud.patches import Patch, Patches


class AtomicItemWrites(Patches):
    """Context manager: one lock around every request moto's DynamoDB handles."""

    def __init__(self) -> None:
        super().__init__()
        # Reentrant: a request whose handling calls DynamoDB again on the same thread waits on nothing.
        self._lock = threading.RLock()

    def declare(self) -> Iterator[Patch]:
        from moto.dynamodb.responses import DynamoHandler

        yield Patch(DynamoHandler, "call_action", self._atomic(DynamoHandler.call_action))

    def _atomic(self, handle: Callable[..., Any]) -> Callable[..., Any]:
        lock = self._lock

        def atomic(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return handle(*args, **kwargs)

        return atomic
