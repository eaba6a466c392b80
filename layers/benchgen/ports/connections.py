"""The provider connections table: read by the training steps, kept by the API for each user."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from benchgen.ports.pages import Page
from benchgen.providers.connections import ConnectionRecord


class ConnectionsReader(Protocol):
    def get(self, connection_id: str) -> ConnectionRecord | None: ...

    def list(
        self,
        *,
        owner: str,
        limit: int = ...,
        next_token: str | None = None,
        keep: Callable[[ConnectionRecord], bool] | None = None,
    ) -> Page[ConnectionRecord]:
        """The owner's connections, newest first; with ``keep``, only those it keeps (a page reads on until
        it holds ``limit`` connections or the owner has no more, so a short page is the last one)."""
        ...


class ConnectionsStore(ConnectionsReader, Protocol):
    """Each user's connections, as the API creates, lists and deletes them."""

    def put(self, record: ConnectionRecord) -> bool:
        """Store a new connection; ``False`` (and nothing changed) when the id is taken."""
        ...

    def delete(self, connection_id: str, *, owner: str) -> bool:
        """Delete the connection if ``owner`` owns it; ``False`` (nothing changed) if not, or if gone."""
        ...


def owned_connections(connections: ConnectionsReader, owner: str) -> Iterator[ConnectionRecord]:
    """Every connection of ``owner``'s, newest first, page after page."""
    token: str | None = None
    while True:
        page = connections.list(owner=owner, limit=100, next_token=token)
        yield from page.items
        if page.next_token is None:
            return
        token = page.next_token
