"""In-process synthesis of the BenchGen stack, for the local cloud and the infra tests."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infra.node_notices import silence_node_release_banners

if TYPE_CHECKING:
    from infra.stack import BenchGenStack

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
    template: dict[str, Any]
    findings: list[NagFinding]
    """cdk-nag findings nobody acknowledged; empty when the stack is clean."""


def synthesize(
    context: dict[str, Any] | None = None, customize: Callable[[BenchGenStack], None] | None = None
) -> Synthesis:
    """Build the app in a temporary directory and return its template and unacknowledged nag findings.

    Unlike `cdk synth`, a nag finding does not raise here: the local cloud only needs the template, and
    the infra tests report findings one by one. CDK is imported lazily (it starts a Node.js process) and
    nothing is cached between calls. `customize` may add constructs to the stack before synthesis.
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
        app, stack = build_app({**defaults, **(context or {})}, outdir=outdir)
        if customize is not None:
            customize(stack)
        try:
            app.synth()
        except RuntimeError as error:
            if _VALIDATION_FAILED not in str(error):
                raise
        root = Path(outdir)
        template: dict[str, Any] = json.loads((root / stack.template_file).read_text(encoding="utf-8"))
        findings = read_findings(root / "validation-report.json")
    return Synthesis(template=template, findings=findings)


def synth_template(context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The BenchGen stack's CloudFormation template as a dict."""
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
