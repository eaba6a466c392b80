"""Everything about a deployment that can be checked without an AWS account, in one command
(``make deploy-check``, or ``python -m infra.deploy_check [--out DIR]``).

The CDK CLI synthesizes the app as an operator would (``npx --yes aws-cdk@2 synth``); then every stack
template of the cloud assembly, nested ones included, must pass cfn-lint (``.cfnlintrc.yaml`` says what it
ignores and why), stay under the resource count each stack is allowed, and define only state machines
that asl-validator accepts; and cdk-nag's report must hold no finding nobody acknowledged.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from infra.assembly import StackTemplate, stack_templates
from infra.node_packages import node_tool
from infra.state_language import definition_errors
from infra.synth import NagFinding, read_findings

REPO_ROOT = Path(__file__).resolve().parents[1]
CFN_LINT_CONFIG = REPO_ROOT / ".cfnlintrc.yaml"
NAG_REPORT = "validation-report.json"
# CloudFormation refuses a stack of more than 500 resources. A stack keeps 40% of that free, so that the
# next feature's resources fit in it, not just the last one's.
CLOUDFORMATION_RESOURCES = 500
RESOURCE_LIMIT = CLOUDFORMATION_RESOURCES * 60 // 100
# How much of a failed synthesis's output the message shows: its end says what went wrong.
_OUTPUT_TAIL = 40


class CheckFailed(Exception):
    """A step that could not run to its end (the synthesis itself, or cfn-lint)."""


def cli_synth_command(outdir: Path) -> list[str]:
    """``cdk synth`` exactly as an operator runs it, writing the cloud assembly to ``outdir``."""
    return [node_tool("npx"), "--yes", "aws-cdk@2", "synth", "--quiet", "--output", str(outdir)]


def synthesize_with_cli(outdir: Path) -> None:
    """The app synthesized by the CDK CLI, run from the repository with this process's environment."""
    result = subprocess.run(  # noqa: S603
        cli_synth_command(outdir), cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-_OUTPUT_TAIL:])
        raise CheckFailed(f"cdk synth failed (exit {result.returncode}):\n{tail}")


@dataclass(frozen=True)
class LintFinding:
    rule: str
    level: str
    message: str
    path: str
    """Where in the template, such as Resources/Queue/Properties/VisibilityTimeout."""

    def __str__(self) -> str:
        return f"{self.rule} ({self.level}) at {self.path}: {self.message}"


def lint_templates(templates: list[Path], config: Path = CFN_LINT_CONFIG) -> dict[Path, list[LintFinding]]:
    """cfn-lint's findings in each template (an empty list for a clean one), with ``config``'s settings."""
    cfn_lint = shutil.which("cfn-lint", path=sysconfig.get_path("scripts"))
    if cfn_lint is None:
        raise CheckFailed("cfn-lint is not installed beside this Python: run make install")
    result = subprocess.run(  # noqa: S603
        [cfn_lint, "--config-file", str(config), "--format", "json", *map(str, templates)],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        matches = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise CheckFailed(f"cfn-lint failed (exit {result.returncode}): {result.stderr.strip()}") from None
    found: dict[Path, list[LintFinding]] = {template: [] for template in templates}
    for match in matches:
        found[Path(match["Filename"])].append(
            LintFinding(
                rule=match["Rule"]["Id"],
                level=match["Level"],
                message=match["Message"],
                path="/".join(map(str, match["Location"]["Path"])),
            )
        )
    return found


def resource_count_problem(name: str, resources: int, limit: int = RESOURCE_LIMIT) -> str | None:
    """Why a stack of this many resources is refused, if it is."""
    if resources <= limit:
        return None
    return (
        f"{name} has {resources} resources, above {limit} (CloudFormation allows {CLOUDFORMATION_RESOURCES} "
        "per stack; each keeps room to grow): move some into a stack of their own"
    )


@dataclass(frozen=True)
class StackReport:
    name: str
    resources: int
    size: int
    lint: list[LintFinding]
    machines: dict[str, list[str]]
    """asl-validator's errors in each state machine's definition, by logical id (none when valid)."""

    def summary(self) -> str:
        valid = sum(not errors for errors in self.machines.values())
        return (
            f"{self.name}: {self.resources} resources (at most {RESOURCE_LIMIT}), {self.size:,} bytes, "
            f"cfn-lint {len(self.lint)} findings, state machines {valid} of {len(self.machines)} valid"
        )

    def problems(self) -> list[str]:
        count = resource_count_problem(self.name, self.resources)
        return [
            *([count] if count else []),
            *(f"{self.name}: cfn-lint {finding}" for finding in self.lint),
            *(
                f"{self.name}: state machine {machine} is not valid States Language: {'; '.join(errors)}"
                for machine, errors in self.machines.items()
                if errors
            ),
        ]


def stack_report(stack: StackTemplate, lint: list[LintFinding]) -> StackReport:
    body = stack.body
    return StackReport(
        name=stack.name,
        resources=len(body.get("Resources", {})),
        size=stack.size,
        lint=lint,
        machines=definition_errors(body),
    )


@dataclass(frozen=True)
class DeployCheck:
    stacks: list[StackReport]
    nag: list[NagFinding]
    """cdk-nag's findings nobody acknowledged."""

    def summary(self) -> str:
        severities = Counter(finding.severity for finding in self.nag)
        nag = ", ".join(f"{count} {severity}" for severity, count in sorted(severities.items())) or "none"
        return "\n".join(
            [*(stack.summary() for stack in self.stacks), f"cdk-nag unacknowledged findings: {nag}"]
        )

    def problems(self) -> list[str]:
        return [
            *([] if self.stacks else ["the cloud assembly has no stack"]),
            *(problem for stack in self.stacks for problem in stack.problems()),
            *(
                f"cdk-nag {finding.rule} ({finding.severity}) on {finding.construct_path}: fix it, or "
                "acknowledge it with its reason in infra/nag.py"
                for finding in self.nag
            ),
        ]


def check_assembly(assembly: Path) -> DeployCheck:
    """Every check of a synthesized cloud assembly."""
    stacks = stack_templates(assembly)
    lint = lint_templates([stack.path for stack in stacks])
    return DeployCheck(
        stacks=[stack_report(stack, lint[stack.path]) for stack in stacks],
        nag=read_findings(assembly / NAG_REPORT),
    )


def _run(outdir: Path) -> int:
    try:
        synthesize_with_cli(outdir)
        check = check_assembly(outdir)
    except CheckFailed as error:
        print(f"deploy check failed: {error}", file=sys.stderr)
        return 1
    print(check.summary())
    problems = check.problems()
    if problems:
        print("deploy check failed:\n" + "\n".join(f"- {problem}" for problem in problems), file=sys.stderr)
        return 1
    print("deploy check passed")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.deploy_check", description="Checks a deployment without an AWS account."
    )
    parser.add_argument(
        "--out", type=Path, help="where cdk synth writes the cloud assembly (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    if args.out is not None:
        return _run(args.out.resolve())
    with tempfile.TemporaryDirectory(prefix="benchgen-deploy-check-") as outdir:
        return _run(Path(outdir))


if __name__ == "__main__":
    sys.exit(main())
