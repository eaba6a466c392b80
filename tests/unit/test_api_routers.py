"""The API's table of routers (``benchgen.api.app.ROUTERS``), by which a request imports its resource's
routers alone: it must name, for each path, every router with a route there."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from benchgen.api.app import ROUTERS

API = Path(__file__).resolve().parents[2] / "layers" / "benchgen" / "api"
ROUTER_MODULES = sorted(
    module.stem for module in API.glob("*.py") if "router = Router()" in module.read_text(encoding="utf-8")
)


def _routes() -> list[tuple[str, str, str]]:
    """(router module, method, rule) of every route the API's routers declare."""
    return [
        (name, method, rule)
        for name in ROUTER_MODULES
        # Powertools keeps a router's routes keyed by (rule, methods, ...) until a resolver includes them.
        for rule, methods, *_ in importlib.import_module(f"benchgen.api.{name}").router._routes
        for method in methods
    ]


def test_the_table_names_the_routers_of_each_paths_resource_and_no_other() -> None:
    # Given every route of every router of the API
    served: dict[str, set[str]] = {}
    for name, _, rule in _routes():
        served.setdefault(rule.removeprefix("/").split("/")[0], set()).add(name)

    # Then the table names, for each first segment of a path, exactly the routers with a route there
    assert {resource: set(names) for resource, names in ROUTERS.items()} == served


def _answers(rule: str, path: str) -> bool:
    """Whether a route of ``rule`` answers ``path`` (a parameter is one segment, as powertools reads it)."""
    return re.fullmatch(re.sub(r"<\w+>", "[^/]+", rule), path) is not None


def test_no_path_is_answered_by_two_routes_so_the_order_routers_come_in_changes_nothing() -> None:
    # Given every route, and a path it answers (its parameters filled in)
    routes = [(method, rule) for _, method, rule in _routes()]
    assert len(routes) == 33

    # When each path is matched against the rules of every route of its method
    answering = {
        (method, rule): [
            other for other_method, other in routes if other_method == method and _answers(other, path)
        ]
        for method, rule in routes
        for path in [re.sub(r"<\w+>", "x", rule)]
    }

    # Then its own route alone answers it
    assert {route: rules for route, rules in answering.items() if rules != [route[1]]} == {}
