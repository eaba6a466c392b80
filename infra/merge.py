"""The application's stacks as one template.

The local cloud provisions the whole application at once, and tests find resources by logical id
wherever they live; both read one template. Merging keeps every stack's sections and replaces each
cross-stack reference (``Fn::ImportValue`` of an export) by the exporting stack's own expression for the
value, which refers to resources by logical id: those ids must therefore be unique across the stacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

IMPORT_VALUE = "Fn::ImportValue"
# The sections whose entries are keyed by logical id; the template's other keys (its format version and
# description) describe one stack and are left out.
KEYED_SECTIONS = ("Parameters", "Rules", "Conditions", "Mappings", "Resources", "Outputs")


class MergeError(ValueError):
    """The stacks cannot be one template: a logical id in two of them, or an import nobody exports."""


def merge_stacks(stacks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One template holding every stack's entries, its imports resolved.

    A resource's logical id in two stacks is refused; a parameter, rule, condition, mapping or output
    that two stacks declare alike (CDK's ``BootstrapVersion`` parameter, for one) is kept once, and one
    they declare differently is refused.
    """
    exports = _exports(stacks)
    merged: dict[str, dict[str, Any]] = {}
    owners: dict[tuple[str, str], str] = {}
    for stack_name, template in stacks.items():
        for section in KEYED_SECTIONS:
            for key, entry in template.get(section, {}).items():
                resolved = _resolve(entry, exports, stack_name)
                target = merged.setdefault(section, {})
                owner = owners.get((section, key))
                if owner is not None and (section == "Resources" or target[key] != resolved):
                    raise MergeError(
                        f"{section}: {key!r} is declared by both {owner} and {stack_name}; logical ids must "
                        "be unique across the application's stacks (give one a logical id of its own)"
                    )
                owners[(section, key)] = stack_name
                target[key] = resolved
    return dict(merged)


def _exports(stacks: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, Any]]:
    """Export name -> (exporting stack, the value's expression in that stack)."""
    exports: dict[str, tuple[str, Any]] = {}
    for stack_name, template in stacks.items():
        for output in template.get("Outputs", {}).values():
            name = output.get("Export", {}).get("Name")
            if name is None:
                continue
            if name in exports:
                raise MergeError(f"export {name!r} is declared by both {exports[name][0]} and {stack_name}")
            exports[name] = (stack_name, output["Value"])
    return exports


def _resolve(value: Any, exports: Mapping[str, tuple[str, Any]], stack_name: str) -> Any:
    if isinstance(value, list):
        return [_resolve(item, exports, stack_name) for item in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {IMPORT_VALUE}:
        name = value[IMPORT_VALUE]
        if not isinstance(name, str) or name not in exports:
            raise MergeError(f"{stack_name} imports {name!r}, which no stack of the application exports")
        exporter, expression = exports[name]
        return _resolve(expression, exports, exporter)
    return {key: _resolve(item, exports, stack_name) for key, item in value.items()}
