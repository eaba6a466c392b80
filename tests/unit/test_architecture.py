"""The house's structure, measured from the code's own imports and names.

Every import of the library (layers/benchgen), the handlers (functions/) and the operator side (infra/,
cli/, localcloud/, examplegen/, modelserver/) is read with ``ast``, wherever it stands (module level,
``if TYPE_CHECKING:``, inside a function), and must keep to the rule of docs/architecture.md: imports point
down, or sideways within a layer, never up, and never in a circle, neither between files nor between
packages. And a Lambda function is named in one place only, its declaration in the catalog.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LIBRARY = "benchgen"
HANDLERS = "functions"
# Operator-side code, never deployed: the CDK app, the command line, the local cloud, the example generator,
# the self-hosted model server.
OPERATOR_SIDE = ("infra", "cli", "localcloud", "examplegen", "modelserver")
SOURCES = {LIBRARY: ROOT / "layers" / LIBRARY, HANDLERS: ROOT / HANDLERS} | {
    package: ROOT / package for package in OPERATOR_SIDE
}
NOT_READ = ("tests",)  # the repo's other top-level package
# The top-level packages, bottom to top: each imports only packages of the tiers below its own
# (docs/architecture.md says the same). The library is the ground, the handlers stand on it; the CDK app and
# the example generator know only the library; the local cloud provisions the app's templates and serves
# models for the examples; the model server reuses the local cloud's HTTP parts; the command line drives
# them all.
PACKAGE_TIERS = (
    (LIBRARY,),
    (HANDLERS,),
    ("examplegen", "infra"),
    ("localcloud",),
    ("modelserver",),
    ("cli",),
)

# Where a Lambda function is declared: its FunctionSpec, whose name is its folder under functions/.
CATALOG = "infra.constructs.catalog"
# The code that builds and runs the functions, which must name them through the catalog. The command line
# is not read: its words (the `benchgen score` command) may equal a function's name without naming the
# function, and it reaches the functions only through the local cloud.
NAMING_FUNCTIONS = ("infra", "localcloud")


@dataclass(frozen=True)
class Layer:
    number: int
    name: str
    modules: tuple[str, ...]  # a module belongs to the layer of the longest of these that prefixes its name


# The library's layers, bottom to top: docs/architecture.md shows the same table.
LAYERS = (
    Layer(
        0,
        "ground",
        (
            "benchgen.errors",
            "benchgen.jsonhead",
            "benchgen.lazy_model",
            "benchgen.naming",
            "benchgen.observability",
            "benchgen.outputs",
            "benchgen.settings",
            "benchgen.stored_numbers",
            "benchgen.vocabulary",
            "benchgen.zipwrite",
        ),
    ),
    Layer(
        1,
        "formats",
        (
            "benchgen.bucket_layout",
            "benchgen.bundle",
            "benchgen.cases",
            "benchgen.judging",
            "benchgen.verdicts",
        ),
    ),
    Layer(2, "records", ("benchgen.records",)),
    Layer(
        3,
        "domain",
        (
            "benchgen.admission",
            "benchgen.compare",
            "benchgen.datasets",
            "benchgen.environment",
            "benchgen.evaluation",
            "benchgen.finetune",
            "benchgen.inference",
            "benchgen.ingest",
            "benchgen.offline",
            "benchgen.ownership",
            "benchgen.phases",
            "benchgen.program_inputs",
            "benchgen.program_outcomes",
            "benchgen.programs",
            "benchgen.providers",
            "benchgen.report",
            "benchgen.sandbox",
            "benchgen.scoring",
            "benchgen.submission",
            "benchgen.training",
        ),
    ),
    Layer(4, "ports", ("benchgen.ports",)),
    Layer(5, "steps", ("benchgen.requests", "benchgen.steps")),
    Layer(6, "adapters", ("benchgen.aws",)),
    Layer(
        7, "entry", ("benchgen.api", "benchgen.aws.handlers", "benchgen.aws.wiring", "benchgen.step_inputs")
    ),
)

# Where boto3 may be imported: the library's adapters only; the handlers reach AWS through them. The operator
# side is not deployed and may use it (the local cloud drives moto with it).
AWS_SDK = ("boto3", "botocore")
AWS_SDK_HOME = "benchgen.aws"
# The REST API's routers parse and answer; what a request does is in benchgen.requests, over the ports.
API_ROUTERS = "benchgen.api"
ADAPTERS = "benchgen.aws"
# The model extra: only the model server imports it, so nothing else needs it installed.
MODEL_STACK = ("torch", "transformers", "trl", "datasets", "accelerate", "tokenizers", "gguf", "safetensors")
MODEL_STACK_HOME = "modelserver"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module of this repo
    line: int
    statement: str

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} ({_path(self.source)}:{self.line}: {self.statement})"


def _module_name(package: str, base: Path, path: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


@cache
def _modules() -> dict[str, Path]:
    found = {}
    for package, base in SOURCES.items():
        for path in sorted(base.rglob("*.py")):
            if "__pycache__" not in path.parts:
                found[_module_name(package, base, path)] = path
    return found


def _path(module: str) -> str:
    return _modules()[module].relative_to(ROOT).as_posix()


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module of this repo that ``name`` (a module, or a name inside one) is."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _statements(module: str, path: Path) -> Iterator[tuple[ast.Import | ast.ImportFrom, list[str]]]:
    """Each import statement, and the full names it imports (``a.b.c`` for ``from a.b import c``)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield node, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([node.module] if node.module else [])])
            yield node, [f"{base}.{alias.name}" for alias in node.names]


@cache
def _imports() -> tuple[Import, ...]:
    modules = _modules()
    found = []
    for module, path in modules.items():
        source_lines = path.read_text(encoding="utf-8").splitlines()
        for node, names in _statements(module, path):
            statement = " ".join(line.strip() for line in source_lines[node.lineno - 1 : node.end_lineno])
            for name in names:
                target = _owner(name, modules)
                if target is not None and target != module:
                    found.append(Import(module, target, node.lineno, statement))
    return tuple(found)


@cache
def _external() -> tuple[tuple[str, str, int], ...]:
    """(module, top-level name of a package outside this repo, line) for every import of one."""
    modules = _modules()
    found = []
    for module, path in modules.items():
        for node, names in _statements(module, path):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            for name in names:
                if _owner(name, modules) is None:
                    found.append((module, name.partition(".")[0], node.lineno))
    return tuple(found)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _layer(module: str) -> Layer | None:
    best: tuple[int, Layer] | None = None
    for layer in LAYERS:
        for prefix in layer.modules:
            if _within(module, prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), layer)
    return best[1] if best else None


def _cycles(edges: dict[str, dict[str, Import]]) -> list[list[Import]]:
    """One circle of imports through each strongly connected group of nodes (Tarjan, then a shortest path
    back to the group's first node)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, {})):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    nodes = sorted(set(edges) | {n for targets in edges.values() for n in targets})
    for node in nodes:
        if node not in index:
            visit(node)
    return [_circle(group, edges) for group in groups]


def _circle(group: list[str], edges: dict[str, dict[str, Import]]) -> list[Import]:
    start, members = group[0], set(group)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(edges.get(node, {})):
                if nxt in members and nxt not in previous:
                    previous[nxt] = node
                    following.append(nxt)
        if start in previous:
            break
        frontier = following
    path = [start]
    while True:
        path.append(previous[path[-1]])
        if path[-1] == start:
            break
    path.reverse()
    return [edges[a][b] for a, b in pairwise(path)]


def _describe(circles: Iterable[list[Import]]) -> str:
    return "\n".join("circle:\n" + "\n".join(f"  {imported}" for imported in circle) for circle in circles)


def test_no_cycles_between_files() -> None:
    edges: dict[str, dict[str, Import]] = defaultdict(dict)
    for imported in _imports():
        edges[imported.source].setdefault(imported.target, imported)
    circles = _cycles(edges)
    assert not circles, f"modules that import each other, directly or around a circle:\n{_describe(circles)}"


def test_no_cycles_between_packages() -> None:
    edges: dict[str, dict[str, Import]] = defaultdict(dict)
    for imported in _imports():
        source, target = _package(imported.source), _package(imported.target)
        if source != target:
            edges[source].setdefault(target, imported)
    circles = _cycles(edges)
    assert not circles, (
        "packages that import each other, directly or around a circle (each arrow shows one import that "
        f"makes it):\n{_describe(circles)}"
    )


def test_every_library_module_has_a_layer() -> None:
    unplaced = [m for m in _modules() if m != LIBRARY and _within(m, LIBRARY) and _layer(m) is None]
    assert not unplaced, (
        f"library modules in no layer: {unplaced}; add each to a layer of LAYERS here and of the table in "
        "docs/architecture.md"
    )


def test_every_layer_names_modules_that_exist() -> None:
    modules = _modules()
    missing = [
        prefix for layer in LAYERS for prefix in layer.modules if not any(_within(m, prefix) for m in modules)
    ]
    assert not missing, f"layers name modules that do not exist: {missing}"


def test_no_library_module_imports_a_higher_layer() -> None:
    upward = []
    for imported in _imports():
        source, target = _layer(imported.source), _layer(imported.target)
        if source is not None and target is not None and target.number > source.number:
            upward.append(
                f"  {source.name} ({source.number}) imports {target.name} ({target.number}): {imported}"
            )
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)


def _tier(module: str) -> int:
    top = module.partition(".")[0]
    return next(number for number, tier in enumerate(PACKAGE_TIERS) if top in tier)


def test_every_top_level_package_has_a_tier() -> None:
    untiered = [package for package in SOURCES if not any(package in tier for tier in PACKAGE_TIERS)]
    assert not untiered, f"top-level packages in no tier of PACKAGE_TIERS: {untiered}"


def test_no_top_level_package_imports_its_own_tier_or_one_above() -> None:
    wrong = [
        f"  tier {_tier(imported.source)} imports tier {_tier(imported.target)}: {imported}"
        for imported in _imports()
        if imported.source.partition(".")[0] != imported.target.partition(".")[0]
        and _tier(imported.target) >= _tier(imported.source)
    ]
    assert not wrong, (
        f"imports between top-level packages that do not point down {PACKAGE_TIERS}:\n" + "\n".join(wrong)
    )


def _function_names() -> set[str]:
    return {handler.parent.name for handler in (ROOT / HANDLERS).glob("*/handler.py")}


def _names_spelled_out(module: str) -> set[str]:
    """The function names that ``module`` holds as a whole string literal (an f-string's parts included)."""
    names = _function_names()
    tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    }


def test_a_function_is_named_only_in_the_catalog() -> None:
    spelled = {
        module: _names_spelled_out(module)
        for module in _modules()
        if any(_within(module, package) for package in NAMING_FUNCTIONS) and module != CATALOG
    }
    wrong = [
        f"  {_path(module)}: {', '.join(sorted(names))}" for module, names in sorted(spelled.items()) if names
    ]
    assert not wrong, (
        f"modules that spell out a Lambda function's name (its folder under {HANDLERS}/): name it through "
        f'its FunctionSpec in {CATALOG} (SCORE.name, not "score"):\n' + "\n".join(wrong)
    )


def test_the_catalog_declares_every_function() -> None:
    undeclared = sorted(_function_names() - _names_spelled_out(CATALOG))
    assert not undeclared, f"folders under {HANDLERS}/ that {CATALOG} does not name: {undeclared}"


def test_only_the_adapters_import_the_aws_sdk() -> None:
    wrong = [
        f"{module} imports {name} ({_path(module)}:{line})"
        for module, name, line in _external()
        if name in AWS_SDK
        and not _within(module, AWS_SDK_HOME)
        and not any(_within(module, package) for package in OPERATOR_SIDE)
    ]
    assert not wrong, f"boto3 is imported outside {AWS_SDK_HOME}:\n" + "\n".join(wrong)


def test_the_api_routers_import_no_adapter() -> None:
    wrong = [
        str(imported)
        for imported in _imports()
        if _within(imported.source, API_ROUTERS) and _within(imported.target, ADAPTERS)
    ]
    assert not wrong, (
        f"the API imports adapters ({ADAPTERS}): reach them through the ports of ApiServices, in a "
        "function of benchgen.requests:\n" + "\n".join(wrong)
    )


def test_only_the_model_server_imports_the_model_stack() -> None:
    wrong = [
        f"{module} imports {name} ({_path(module)}:{line})"
        for module, name, line in _external()
        if name in MODEL_STACK and not _within(module, MODEL_STACK_HOME)
    ]
    assert not wrong, f"torch and its kin are imported outside {MODEL_STACK_HOME}:\n" + "\n".join(wrong)


def test_every_top_level_package_is_read() -> None:
    packages = sorted(path.parent.name for path in ROOT.glob("*/__init__.py"))
    unread = [package for package in packages if package not in SOURCES and package not in NOT_READ]
    assert not unread, f"top-level packages these tests do not read: {unread}; add each to SOURCES"


def _documented_layers() -> list[Layer]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = re.search(r"^## Layers\n(.*?)(?=^## |\Z)", text, re.DOTALL | re.MULTILINE)
    assert section, f"{ARCHITECTURE.relative_to(ROOT)} has no '## Layers' section"
    layers = []
    for row in re.findall(r"^\|\s*(\d+)\s*\|(.*)\|\s*$", section.group(1), re.MULTILINE):
        number, rest = row
        cells = [cell.strip() for cell in rest.split("|")]
        layers.append(Layer(int(number), cells[0], tuple(re.findall(r"`([\w.]+)`", cells[1]))))
    return layers


def test_the_architecture_page_shows_these_layers() -> None:
    documented = {layer.number: layer for layer in _documented_layers()}
    expected = {layer.number: layer for layer in LAYERS}
    differences = []
    for number in sorted(documented.keys() | expected.keys()):
        page, here = documented.get(number), expected.get(number)
        if page is None or here is None:
            differences.append(f"layer {number} is only {'here' if page is None else 'on the page'}")
            continue
        if page.name != here.name:
            differences.append(f"layer {number} is {page.name!r} on the page, {here.name!r} here")
        only_page, only_here = set(page.modules) - set(here.modules), set(here.modules) - set(page.modules)
        if only_page or only_here:
            differences.append(
                f"layer {number} ({here.name}): only on the page {sorted(only_page)}, "
                f"only here {sorted(only_here)}"
            )
    doc = ARCHITECTURE.relative_to(ROOT)
    assert not differences, (
        f"the Layers table of {doc} and LAYERS here differ (change both together):\n" + "\n".join(differences)
    )
