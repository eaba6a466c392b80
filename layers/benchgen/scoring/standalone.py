"""One self-contained Python file made from BenchGen modules that import only the standard library.

The modules are laid out one after the other, each after those it imports, with the imports between them
removed (the names they import are then the file's own globals) and one ``from __future__`` line at the
top. What would not survive that is refused, naming the module: an import of BenchGen that is not a
top-level ``from benchgen... import name`` of an amalgamated module, an import of anything outside the
standard library, or one global name defined differently by two modules.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass

PACKAGE = "benchgen"
# A service may run the file as text under a module name the import system does not know, where a
# dataclass, looking its module up by name, would fail to build.
_REGISTERED = (
    "import sys",
    "",
    "sys.modules.setdefault(__name__, type(sys)(__name__))",
)


@dataclass(frozen=True)
class _Module:
    name: str
    lines: list[str]
    tree: ast.Module
    depends: tuple[str, ...]


def _source(name: str) -> str:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ValueError(f"there is no module {name} to amalgamate")
    with open(spec.origin, encoding="utf-8") as file:
        return file.read()


def _ours(module: str | None) -> bool:
    return module is not None and (module == PACKAGE or module.startswith(PACKAGE + "."))


def _read(name: str) -> _Module:
    text = _source(name)
    tree = ast.parse(text)
    depends: list[str] = []
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or _ours(node.module)):
            if node.level or id(node) not in top or any(alias.asname for alias in node.names):
                raise ValueError(
                    f"{name} line {node.lineno}: join with a top-level `from benchgen.x import name`"
                )
            depends.append(str(node.module))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            modules = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for module in modules:
                root = str(module).partition(".")[0]
                if _ours(module):
                    raise ValueError(f"{name} line {node.lineno}: only `from benchgen.x import name` joins")
                if root != "__future__" and root not in sys.stdlib_module_names:
                    raise ValueError(f"{name} line {node.lineno}: {module} is not in the standard library")
    return _Module(name, text.splitlines(), tree, tuple(depends))


def _ordered(entry: str) -> list[_Module]:
    """``entry`` and every module it imports from BenchGen, each after those it imports."""
    done: dict[str, _Module] = {}
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            raise ValueError(f"modules import each other: {' -> '.join([*visiting, name])}")
        visiting.append(name)
        module = _read(name)
        for dependency in module.depends:
            visit(dependency)
        visiting.pop()
        done[name] = module

    visit(entry)
    return list(done.values())


def _bindings(module: _Module) -> dict[str, str]:
    """Each global name the module binds, with what binds it: the same import in two modules is one
    binding, anything else is the module's own."""
    found: dict[str, str] = {}
    for node in module.tree.body:
        if isinstance(node, ast.ImportFrom) and not _ours(node.module) and node.module != "__future__":
            for alias in node.names:
                found[alias.asname or alias.name] = f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.partition(".")[0]] = f"import {alias.name}"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = module.name
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for each in ast.walk(target):
                    if isinstance(each, ast.Name):
                        found[each.id] = module.name
    return found


def _body(module: _Module) -> list[str]:
    """The module's lines without its ``__future__`` import and its imports of amalgamated modules."""
    dropped: set[int] = set()
    for node in module.tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module == "__future__" or _ours(node.module)):
            dropped.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    return [line for number, line in enumerate(module.lines) if number not in dropped]


def amalgamate(entry: str, docstring: str) -> str:
    """The source of one file holding module ``entry`` and the BenchGen modules it imports."""
    modules = _ordered(entry)
    bound: dict[str, tuple[str, str]] = {}
    for module in modules:
        for name, binding in _bindings(module).items():
            earlier = bound.setdefault(name, (module.name, binding))
            if earlier[1] != binding:
                raise ValueError(f"{module.name} and {earlier[0]} both define {name!r}: rename one")
    parts = [f'"""{docstring}"""', "", "from __future__ import annotations", "", *_REGISTERED]
    for module in modules:
        parts += ["", "", f"# ---- {module.name} ----", "", *_body(module)]
    source = "\n".join(parts).rstrip() + "\n"
    compile(source, f"{entry}.standalone", "exec")
    return source
