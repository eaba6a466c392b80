"""Every state machine definition of a template, validated as Amazon States Language by npm's asl-validator
(pinned in infra/asl_validator), the way Step Functions would read it once deployed."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infra.node_packages import installed_package, node_tool
from infra.references import IMPORTED, render

ASL_VALIDATOR = Path(__file__).resolve().parent / "asl_validator"
STATE_MACHINE = "AWS::StepFunctions::StateMachine"
# What a reference stands for until deployment: made-up but well-formed, so that a definition's
# "Resource" is an ARN the validator accepts and a string stays a string.
STAND_IN_REGION = "us-east-1"
STAND_IN_ACCOUNT = "123456789012"
PSEUDO_PARAMETERS = {
    "AWS::Partition": "aws",
    "AWS::Region": STAND_IN_REGION,
    "AWS::AccountId": STAND_IN_ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
}
# asl-validator's exit status for a definition that is not valid (2 is its own failure).
_INVALID = 1


def stand_in(resources: dict[str, Any]) -> Callable[[str], str]:
    """What each reference of a template stands for: a pseudo parameter's usual value; a resource's ARN
    (``arn:aws:lambda:us-east-1:123456789012:function:IngestFunction``), or its logical id in lower case
    for a name or another attribute; another stack's export named ``...Arn`` an ARN, any other its name in
    lower case."""

    def resolve(reference: str) -> str:
        if reference in PSEUDO_PARAMETERS:
            return PSEUDO_PARAMETERS[reference]
        if reference.startswith(IMPORTED):
            export = reference.removeprefix(IMPORTED)
            if export.endswith("Arn"):
                return f"arn:aws:imported:{STAND_IN_REGION}:{STAND_IN_ACCOUNT}:export:{export}"
            return export.lower()
        logical_id, _, attribute = reference.partition(".")
        if attribute == "Arn":
            # AWS::Lambda::Function, or Custom::Name for a custom resource.
            parts = resources[logical_id]["Type"].split("::")
            service, kind = parts[1], parts[-1]
            return (
                f"arn:aws:{service.lower()}:{STAND_IN_REGION}:{STAND_IN_ACCOUNT}:{kind.lower()}:{logical_id}"
            )
        return "-".join(part.lower() for part in (logical_id, attribute) if part)

    return resolve


def definitions(template: dict[str, Any]) -> dict[str, str]:
    """Each state machine's definition (its DefinitionString, references stood in for), by logical id."""
    resources: dict[str, Any] = template.get("Resources", {})
    resolve = stand_in(resources)
    return {
        logical_id: render(resource["Properties"]["DefinitionString"], resolve)
        for logical_id, resource in resources.items()
        if resource["Type"] == STATE_MACHINE
    }


def validate(definition: str) -> list[str]:
    """asl-validator's errors in one definition; none when it is valid."""
    validator = installed_package(ASL_VALIDATOR, "asl-validator")
    entry = json.loads((validator / "package.json").read_text(encoding="utf-8"))["bin"]["asl-validator"]
    with tempfile.TemporaryDirectory(prefix="benchgen-asl-") as scratch:
        path = Path(scratch) / "definition.json"
        path.write_text(definition, encoding="utf-8")
        result = subprocess.run(  # noqa: S603
            [node_tool("node"), str(validator / entry), "--json-path", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode not in (0, _INVALID):
        raise RuntimeError(f"asl-validator failed (exit {result.returncode}): {result.stderr.strip()}")
    # On stderr: a line naming the definition, then one line per error.
    return [line.strip() for line in result.stderr.splitlines()[1:] if line.strip()]


def definition_errors(template: dict[str, Any]) -> dict[str, list[str]]:
    """Every state machine of the template with asl-validator's errors in its definition, by logical id;
    an empty list for a valid one."""
    return {logical_id: validate(text) for logical_id, text in definitions(template).items()}
