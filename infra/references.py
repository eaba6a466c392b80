"""CloudFormation values as text, with each reference resolved only at deploy time written as its
reference (``${DataBucket.Arn}``) or as a stand-in for what it will be."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

# Fn::Sub's references: ${Name} or ${Name.Attribute}; ${!Literal} writes ${Literal}.
_SUB_REFERENCE = re.compile(r"\$\{(!?)([^}]+)\}")


# How a value another stack exports is handed to a resolver: this prefix, then the export's name.
IMPORTED = "ImportValue:"


def placeholder(reference: str) -> str:
    """``Name`` (a Ref) or ``Name.Attribute`` (a GetAtt) as ``${...}``."""
    return "${" + reference + "}"


def render(value: Any, resolve: Callable[[str], str] = placeholder) -> str:
    """A CloudFormation value as text: each Ref and Fn::GetAtt, also inside Fn::Join and Fn::Sub, becomes
    ``resolve`` of ``Name`` or ``Name.Attribute`` (by default a placeholder such as ${DataBucket.Arn}), and
    each Fn::ImportValue ``resolve`` of ``IMPORTED`` and the export's name."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return resolve(str(value["Ref"]))
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return resolve(f"{logical_id}.{attribute}")
    if isinstance(value, dict) and "Fn::ImportValue" in value:
        return resolve(IMPORTED + render(value["Fn::ImportValue"], resolve))
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(render(part, resolve) for part in parts)
    if isinstance(value, dict) and "Fn::Sub" in value:
        text, variables = (value["Fn::Sub"], {}) if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"]

        def substitute(match: re.Match[str]) -> str:
            literal, name = match.groups()
            if literal:
                return "${" + name + "}"
            return render(variables[name], resolve) if name in variables else resolve(name)

        return _SUB_REFERENCE.sub(substitute, str(text))
    raise ValueError(f"cannot render {json.dumps(value)}")
