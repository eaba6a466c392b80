"""Hooks on the moto server's request dispatch: each sees a request before moto does.

moto's server is one WSGI application (``DomainDispatcherApplication``) that routes each request to its
service. A hook replaces that entry with its own, given moto's to call, while it is active, and puts it
back when it ends; hooks nest, each restoring what it replaced (see patches.py). moto is pinned for this.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from localcloud.patches import Patch, Patches

# moto's dispatch, as its application class holds it: (application, WSGI environ, start_response).
Dispatch = Callable[[Any, dict[str, Any], Any], Iterable[bytes]]


class DispatchHook(Patches):
    """Context manager: while active, the moto server's requests go through :meth:`wrap`."""

    @abstractmethod
    def wrap(self, dispatch: Dispatch) -> Dispatch:
        """The entry that replaces ``dispatch`` (moto's, or the hook's active before this one)."""

    def declare(self) -> Iterator[Patch]:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        yield Patch(DomainDispatcherApplication, "__call__", self.wrap(DomainDispatcherApplication.__call__))
