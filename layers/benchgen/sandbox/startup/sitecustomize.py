"""Started with every program BenchGen runs (its folder is on the program's PYTHONPATH).

numpy 1.24 removed the aliases ``np.float``, ``np.int``, ``np.bool``, ``np.object``, ``np.str``,
``np.long``, ``np.unicode`` and ``np.complex``, which CodaLab-era programs use. In a runtime whose numpy
lacks one, such a program gets AttributeError, and one that catches it goes on with a fallback of its own
(a missing-score value, say): a plausible result that the bundle's image would never have given. So this
notes each such name the program's own code asks numpy for and does not get, one line ``<name> <numpy
version>`` in the file ``BENCHGEN_REMOVED_NAMES`` names; the run then fails and says which.

Only the program's own code counts: a library in the runtime that probes numpy for a name (``hasattr``)
is not the program using it. The standard library only: it runs in every runtime, before the program.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

REMOVED = frozenset({"float", "int", "bool", "object", "str", "long", "unicode", "complex"})
NOTES = "BENCHGEN_REMOVED_NAMES"


def _installed(filename: str) -> bool:
    """Whether ``filename`` is code of the runtime (its packages or its standard library)."""
    roots = {os.path.realpath(root) for root in (sys.prefix, sys.base_prefix, sys.exec_prefix)} - {os.sep}
    path = os.path.realpath(filename)
    return any(path.startswith(root + os.sep) for root in roots)


def _note(name: str, version: str) -> None:
    notes = os.environ.get(NOTES)
    if not notes:
        return
    try:
        with open(notes, "a", encoding="utf-8") as handle:
            handle.write(f"{name} {version}\n")
    except OSError:
        pass


def _watch(module: ModuleType) -> None:
    """Wrap numpy's module ``__getattr__`` (where it answers the removed names with AttributeError)."""
    original = module.__dict__.get("__getattr__")

    def __getattr__(name: str) -> Any:
        try:
            if original is None:
                raise AttributeError(f"module 'numpy' has no attribute {name!r}")
            return original(name)
        except AttributeError:
            if name in REMOVED and not _installed(sys._getframe(1).f_code.co_filename):
                _note(name, getattr(module, "__version__", "unknown"))
            raise

    module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _NumpyWatch:
    """A finder that lets the real one find numpy, then watches the module once it is loaded."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "numpy":
            return None
        sys.meta_path.remove(self)
        try:
            import importlib.util

            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _watch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if os.environ.get(NOTES):
    sys.meta_path.insert(0, _NumpyWatch())
