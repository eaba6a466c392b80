"""The CloudFormation templates of a synthesized cloud assembly (`cdk synth`'s output folder), every stack
its manifest names and every nested stack of those."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
STACK_ARTIFACT = "aws:cloudformation:stack"
NESTED_STACK = "AWS::CloudFormation::Stack"
# Where CDK records the template file of a nested stack: on the parent's AWS::CloudFormation::Stack
# resource, whose TemplateURL points at that file once it is published as an asset.
ASSET_PATH = "aws:asset:path"


@dataclass(frozen=True)
class StackTemplate:
    """One template: a stack's artifact id, or ``<parent>/<logical id>`` for a nested stack."""

    name: str
    path: Path

    @property
    def body(self) -> dict[str, Any]:
        template: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        return template

    @property
    def size(self) -> int:
        """The template's size in bytes, as CloudFormation receives it."""
        return self.path.stat().st_size


def stack_templates(assembly: Path) -> list[StackTemplate]:
    """Every stack template of the assembly, each followed by its nested stacks' templates."""
    manifest = json.loads((assembly / MANIFEST).read_text(encoding="utf-8"))
    found: list[StackTemplate] = []
    for name, artifact in manifest.get("artifacts", {}).items():
        if artifact["type"] == STACK_ARTIFACT:
            found.extend(_with_nested(StackTemplate(name, assembly / artifact["properties"]["templateFile"])))
    return found


def _with_nested(stack: StackTemplate) -> list[StackTemplate]:
    found = [stack]
    for logical_id, resource in stack.body.get("Resources", {}).items():
        asset = resource.get("Metadata", {}).get(ASSET_PATH)
        if resource["Type"] == NESTED_STACK and asset is not None:
            nested = StackTemplate(f"{stack.name}/{logical_id}", stack.path.parent / asset)
            found.extend(_with_nested(nested))
    return found
