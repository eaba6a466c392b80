"""Hooks on the moto server's request dispatch: each sees a request before moto does.

moto's server is one WSGI application (``DomainDispatcherApplication``) that routes each request to its
service. A hook replaces that entry with its own, given moto's to call, while it is active, and puts it
back when it ends; hooks nest, each restoring what it replaced. moto is pinned for this.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Self

# moto's dispatch, as its application class holds it: (application, WSGI environ, start_response).
Dispatch = Callable[[Any, dict[str, Any], Any], Iterable[bytes]]
_WSGI_ENTRY = "__call__"


class DispatchHook(ABC):
    """Context manager: while active, the moto server's requests go through :meth:`wrap`."""

    def __init__(self) -> None:
        self._dispatch: Dispatch | None = None

    @property
    def active(self) -> bool:
        return self._dispatch is not None

    @abstractmethod
    def wrap(self, dispatch: Dispatch) -> Dispatch:
        """The entry that replaces ``dispatch`` (moto's, or the hook's active before this one)."""

    def __enter__(self) -> Self:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        if self.active:
            return self
        dispatch: Dispatch = DomainDispatcherApplication.__dict__[_WSGI_ENTRY]
        setattr(DomainDispatcherApplication, _WSGI_ENTRY, self.wrap(dispatch))
        self._dispatch = dispatch
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        if self._dispatch is None:
            return
        setattr(DomainDispatcherApplication, _WSGI_ENTRY, self._dispatch)
        self._dispatch = None
