"""How the local cloud changes moto (and the libraries around it) while it runs, and puts them back.

The local cloud makes moto behave as AWS does by replacing some of its attributes, private ones among
them (moto is pinned for this reason). Each change is a :class:`Patch`: one attribute, the replacement,
and what was there before, restored exactly on leaving, or removed when the owner did not hold it itself
(an inherited method, a property of a base class). A module that changes moto subclasses
:class:`Patches` and declares its patches; entering installs them in order, leaving restores them in
reverse, and a failure part-way through installing restores what was already installed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from types import TracebackType
from typing import Any, Self

_ABSENT = object()


class Patch:
    """Context manager: while entered, ``owner.name`` is ``replacement``."""

    def __init__(self, owner: Any, name: str, replacement: Any) -> None:
        self.owner = owner
        self.name = name
        self.replacement = replacement
        self._replaced: Any = _ABSENT

    @classmethod
    def wrapping(cls, owner: Any, name: str, wrap: Callable[[Any], Any]) -> Patch:
        """The patch that replaces ``owner.name`` with ``wrap`` of what it is now."""
        return cls(owner, name, wrap(getattr(owner, name)))

    def __enter__(self) -> Self:
        # The owner's own attribute, not what lookup finds: a descriptor is put back as itself (getattr
        # would hand back the function a staticmethod wraps), an inherited one is not copied down.
        self._replaced = vars(self.owner).get(self.name, _ABSENT)
        setattr(self.owner, self.name, self.replacement)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._replaced is _ABSENT:
            delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self._replaced)
        self._replaced = _ABSENT


class Patches(ABC):
    """Context manager: while entered, every patch :meth:`declare` yields is installed."""

    def __init__(self) -> None:
        self._installed: ExitStack | None = None

    @property
    def active(self) -> bool:
        return self._installed is not None

    @abstractmethod
    def declare(self) -> Iterable[Patch]:
        """The patches, made when entering: each may wrap what the ones before it installed."""

    def __enter__(self) -> Self:
        if self._installed is not None:
            raise RuntimeError(f"{type(self).__name__} is already installed")
        with ExitStack() as installing:
            for patch in self.declare():
                installing.enter_context(patch)
            self._installed = installing.pop_all()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        installed, self._installed = self._installed, None
        if installed is not None:
            installed.close()
