"""Reading and changing the application's per-stack templates by logical id, wherever a resource lives."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def resources(stacks: Mapping[str, dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every stack's resources as (logical id, resource); the resources are the templates' own."""
    for template in stacks.values():
        yield from template.get("Resources", {}).items()


def resource(stacks: Mapping[str, dict[str, Any]], logical_id: str) -> dict[str, Any]:
    """The resource `logical_id` names, from the stack that declares it."""
    found = [body for lid, body in resources(stacks) if lid == logical_id]
    if len(found) != 1:
        raise KeyError(f"{logical_id!r} is declared by {len(found)} stacks, not one")
    return found[0]
