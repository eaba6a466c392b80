"""A function as Lambda runs it, assembled on this machine: its code asset, the layer, the runtime's boto3.

Lambda's Python runtime searches /var/task (the code asset), then /opt/python (the layer), then its own
site-packages (boto3 and its dependencies); nothing else. `DeployedFunction.command` starts an isolated
interpreter (`python -I -S`: no site-packages, no PYTHON* variables, no current directory) with exactly
that search path and the environment the template gives the function, so whatever only the development
environment provides is missing here too. The layer and the runtime stand-in are built for this machine's
Python by the same resolution as the deployed layer (infra/constructs/layer.py).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import CopyOptions, FileSystem

from infra.constructs.catalog import SPECS
from infra.constructs.functions import ASSET_EXCLUDE, FUNCTIONS_ROOT
from infra.constructs.layer import PipTarget, pip_install_command, resolve, runtime_requirements
from infra.references import render

# Set by the Lambda runtime in every execution environment; the values here are placeholders (no
# credentials: importing a handler must not need them).
_RUNTIME_ENVIRONMENT = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
    "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    "LANG": "en_US.UTF-8",
    "TZ": ":UTC",
}


def build_runtime(directory: Path, target: PipTarget) -> Path:
    """What the Lambda runtime provides (the pinned boto3 and its dependencies), installed into directory."""
    packages = resolve(runtime_requirements(), target)
    subprocess.run(pip_install_command(directory, packages, target), check=True)  # noqa: S603
    return directory


def stage_asset(name: str, directory: Path) -> Path:
    """The files Code.from_asset ships for functions/<name>, copied by CDK with the same excludes."""
    FileSystem.copy_directory(
        str(FUNCTIONS_ROOT / name), str(directory), options=CopyOptions(exclude=list(ASSET_EXCLUDE))
    )
    return directory


@dataclass(frozen=True)
class DeployedFunction:
    """One function of the synthesized template, with the folders that stand in for /var/task and /opt."""

    name: str
    logical_id: str
    properties: dict[str, Any]
    task_root: Path
    layer_root: Path | None
    runtime_root: Path

    @property
    def handler(self) -> str:
        """``module.function``: a zip function's Handler, or the command of a container image's."""
        if self.properties.get("PackageType") == "Image":
            return str(self.properties["ImageConfig"]["Command"][0])
        return str(self.properties["Handler"])

    @property
    def handler_module(self) -> str:
        module, _, _ = self.handler.rpartition(".")
        return module

    @property
    def handler_name(self) -> str:
        return self.handler.rpartition(".")[2]

    @property
    def search_path(self) -> list[str]:
        roots = [self.task_root, self.layer_root, self.runtime_root]
        return [str(root) for root in roots if root is not None]

    @property
    def environment(self) -> dict[str, str]:
        variables = self.properties.get("Environment", {}).get("Variables", {})
        return {
            **_RUNTIME_ENVIRONMENT,
            "AWS_LAMBDA_FUNCTION_NAME": self.logical_id,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.properties.get("MemorySize", 128)),
            "LAMBDA_TASK_ROOT": str(self.task_root),
            "_HANDLER": self.handler,
            **{name: render(value) for name, value in variables.items()},
        }

    def command(self, code: str, *, bytecode: bool = True) -> list[str]:
        """`python -I -S` running code after putting the function's search path first, as Lambda does."""
        prelude = f"import sys; sys.path[:0] = {self.search_path!r}\n"
        return [sys.executable, "-I", "-S", *([] if bytecode else ["-B"]), "-c", prelude + code]

    def run(self, code: str, *, bytecode: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603
            self.command(code, bytecode=bytecode),
            cwd=self.task_root,
            env=self.environment,
            capture_output=True,
            text=True,
            check=False,
        )


def deployed_functions(
    template: dict[str, Any], workdir: Path, *, layer_root: Path, runtime_root: Path
) -> list[DeployedFunction]:
    """Every function in SPECS as the template deploys it: its staged asset, and the layer if it uses one."""
    resources: dict[str, Any] = template["Resources"]
    layers = {logical_id for logical_id, r in resources.items() if r["Type"] == "AWS::Lambda::LayerVersion"}
    assembled = []
    for spec in SPECS:
        properties: dict[str, Any] = resources[spec.logical_id]["Properties"]
        # The sandbox's image installs the layer's package set and the library where a layer goes (/opt).
        image = properties.get("PackageType") == "Image"
        uses_layer = image or any(layer.get("Ref") in layers for layer in properties.get("Layers", []))
        assembled.append(
            DeployedFunction(
                name=spec.name,
                logical_id=spec.logical_id,
                properties=properties,
                task_root=stage_asset(spec.folder, workdir / spec.name),
                layer_root=layer_root if uses_layer else None,
                runtime_root=runtime_root,
            )
        )
    return assembled
