"""In-process synthesis of the BenchGen stacks, for the local cloud and the infra tests."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infra.merge import merge_stacks
from infra.node_notices import silence_node_release_banners

if TYPE_CHECKING:
    from infra.stacks.application import BenchGenStacks

# Skips asset bundling (the layer's pip install): the template is all that is wanted here.
NO_BUNDLING: dict[str, Any] = {"aws:cdk:bundling-stacks": []}
# For the same reason the console's files are a one-page stand-in unless the context names a built app;
# `cdk synth` (infra/app.py) deploys web/dist and stops when it is not built.
STAND_IN_PAGE = "<!doctype html><title>BenchGen</title>\n"
_VALIDATION_FAILED = "ValidationFailed"


@dataclass(frozen=True)
class NagFinding:
    rule: str
    severity: str
    construct_path: str


@dataclass(frozen=True)
class Synthesis:
    stacks: dict[str, dict[str, Any]]
    """Each stack's template by stack name, in deployment order."""
    findings: list[NagFinding]
    """cdk-nag findings nobody acknowledged; empty when the stacks are clean."""

    @cached_property
    def template(self) -> dict[str, Any]:
        """The application as one template, its cross-stack references resolved (``infra.merge``)."""
        return merge_stacks(self.stacks)


def synthesize(
    context: dict[str, Any] | None = None, customize: Callable[[BenchGenStacks], None] | None = None
) -> Synthesis:
    """Build the app in a temporary directory and return its templates and unacknowledged nag findings.

    Unlike `cdk synth`, a nag finding does not raise here: the local cloud only needs the templates, and
    the infra tests report findings one by one. CDK is imported lazily (it starts a Node.js process) and
    nothing is cached between calls. `customize` may add constructs to the stacks before synthesis.
    """
    silence_node_release_banners()
    from infra.app import build_app
    from infra.constructs.console import CONSOLE_ASSETS, ENTRY_PAGE

    with (
        tempfile.TemporaryDirectory(prefix="benchgen-synth-") as outdir,
        tempfile.TemporaryDirectory(prefix="benchgen-console-") as stand_in,
    ):
        (Path(stand_in) / ENTRY_PAGE).write_text(STAND_IN_PAGE, encoding="utf-8")
        defaults = {**NO_BUNDLING, CONSOLE_ASSETS: stand_in}
        app, stacks = build_app({**defaults, **(context or {})}, outdir=outdir)
        if customize is not None:
            customize(stacks)
        try:
            app.synth()
        except RuntimeError as error:
            if _VALIDATION_FAILED not in str(error):
                raise
        root = Path(outdir)
        templates = read_templates(root, stacks)
        findings = read_findings(root / "validation-report.json")
    return Synthesis(stacks=templates, findings=findings)


def read_templates(outdir: Path, stacks: BenchGenStacks) -> dict[str, dict[str, Any]]:
    """Each stack's template from the cloud assembly in `outdir`, by stack name in deployment order."""
    return {
        stack.stack_name: json.loads((outdir / stack.template_file).read_text(encoding="utf-8"))
        for stack in stacks.in_order
    }


def synth_stacks(context: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Each BenchGen stack's CloudFormation template as a dict, by stack name in deployment order."""
    return synthesize(context).stacks


def synth_template(context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The BenchGen application as one CloudFormation template (its stacks merged)."""
    return synthesize(context).template


def read_findings(report: Path) -> list[NagFinding]:
    if not report.exists():
        return []
    findings: list[NagFinding] = []
    for plugin in json.loads(report.read_text(encoding="utf-8"))["pluginReports"]:
        for violation in plugin["violations"]:
            findings.extend(
                NagFinding(
                    rule=violation["ruleName"],
                    severity=violation["severity"],
                    construct_path=construct["constructPath"],
                )
                for construct in violation["violatingConstructs"]
            )
    return findings
