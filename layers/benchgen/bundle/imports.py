"""The modules a program imports, read from its source without running it, and those a runtime lacks.

Every ``.py`` file of the program is parsed with :mod:`ast`; each ``import a.b`` and ``from a.b import c``
counts as its top-level name ``a``. Not counted: the standard library (``sys.stdlib_module_names``),
relative imports, the program's own modules (a ``.py`` file or a folder anywhere in it), an import inside
a ``try`` that catches ``ImportError`` (the program copes without it), and an import that follows a change
to ``sys.path`` in the same file (an ingestion program importing the participant's code: what it finds
there is the submission's, which no static read of the bundle can see). Imports built at run time
(``importlib``, ``__import__``) are not seen.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@dataclass(frozen=True)
class MissingImport:
    """A module a program imports that the runtime cannot import."""

    program: str  # "scoring program" or "ingestion program"
    module: str
    files: tuple[str, ...]  # the program's files that import it, relative to the program folder

    def describe(self, runtime: str) -> str:
        where = ", ".join(self.files)
        return f"the {self.program} imports {self.module} ({where}), which runtime {runtime} does not provide"


def _catches_import_errors(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(kind, ast.Name) and kind.id in _IMPORT_ERRORS for kind in kinds)


def _is_sys_path(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def _changes_sys_path(node: ast.AST) -> bool:
    """``sys.path.insert(...)``, ``sys.path.append(...)``, ``sys.path = ...``, ``sys.path[:0] = ...``."""
    for inner in ast.walk(node):
        calls = isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
        if calls and _is_sys_path(inner.func.value):  # type: ignore[attr-defined]
            return True
        targets = inner.targets if isinstance(inner, ast.Assign) else []
        targets += [inner.target] if isinstance(inner, ast.AugAssign) else []
        for target in targets:
            if _is_sys_path(target) or (isinstance(target, ast.Subscript) and _is_sys_path(target.value)):
                return True
    return False


class _Reader(ast.NodeVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self._guarded = 0
        self._path_changed = False

    def _add(self, module: str) -> None:
        if not self._guarded and not self._path_changed:
            self.names.add(module.split(".", 1)[0])

    def _try(self, node: ast.Try | ast.TryStar) -> None:
        guarded = any(_catches_import_errors(handler) for handler in node.handlers)
        self._guarded += guarded
        for statement in node.body:
            self.visit(statement)
        self._guarded -= guarded
        for handler in node.handlers:
            self.visit(handler)
        for statement in [*node.orelse, *node.finalbody]:
            self.visit(statement)

    visit_Try = visit_TryStar = _try

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._add(node.module)

    def _statement(self, node: ast.stmt) -> None:
        self._path_changed = self._path_changed or _changes_sys_path(node)
        self.generic_visit(node)

    visit_Expr = visit_Assign = visit_AugAssign = _statement


def _own_modules(folder: Path) -> set[str]:
    own = {path.stem for path in folder.rglob("*.py")}
    own |= {path.name for path in folder.rglob("*") if path.is_dir()}
    return own


def module_imports(source: str) -> set[str]:
    """The top-level names a Python source imports (see the module's note for what is not counted);
    raises SyntaxError for a source that does not parse."""
    reader = _Reader()
    reader.visit(ast.parse(source))
    return reader.names


def program_imports(folder: Path) -> dict[str, list[str]]:
    """Each module the program in ``folder`` imports that is neither its own nor the standard library,
    with the files (relative, sorted) that import it. A file that does not parse is skipped: running it
    says more than a static read can."""
    own = _own_modules(folder)
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        try:
            names = module_imports(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError, RecursionError):
            continue
        for name in sorted(names - own - set(sys.stdlib_module_names)):
            found.setdefault(name, []).append(path.relative_to(folder).as_posix())
    return found


def missing_imports(
    programs: Iterable[tuple[str, Path]], provided: frozenset[str]
) -> Iterator[MissingImport]:
    """What the programs (``(kind, folder)``) import that ``provided`` lacks, once per kind and module."""
    seen: dict[tuple[str, str], set[str]] = {}
    for kind, folder in programs:
        for module, files in program_imports(folder).items():
            if module not in provided:
                seen.setdefault((kind, module), set()).update(files)
    for (kind, module), importers in sorted(seen.items()):
        yield MissingImport(program=kind, module=module, files=tuple(sorted(importers)))
