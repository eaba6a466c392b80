"""The shared library as a Lambda layer, built on this machine without Docker."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsii
from aws_cdk import BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYER_SOURCE = REPO_ROOT / "layers"
LIBRARY_PACKAGE = "benchgen"

RUNTIME = lambda_.Runtime.PYTHON_3_13
ARCHITECTURE = lambda_.Architecture.ARM_64
_PIP_PLATFORM = "manylinux2014_aarch64"
_PIP_PYTHON_VERSION = "3.13"
# The Lambda runtime already ships boto3; bundling a second copy would only grow the layer.
_PROVIDED_BY_RUNTIME = frozenset({"boto3", "botocore"})
_IGNORED_FILES = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")


def layer_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """The pinned runtime dependencies of the library, read from pyproject.toml (one source of truth)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements: list[str] = []
    for requirement in project["dependencies"]:
        name = requirement.split("==", 1)[0].strip().lower()
        if "==" not in requirement:
            raise ValueError(f"layer dependency {requirement!r} must be pinned with == in {pyproject}")
        if name not in _PROVIDED_BY_RUNTIME:
            requirements.append(requirement.strip())
    return requirements


def pip_install_command(target: Path, requirements: list[str]) -> list[str]:
    """pip resolving wheels for the Lambda platform (arm64, CPython 3.13), never building from source."""
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-compile",
        "--platform",
        _PIP_PLATFORM,
        "--implementation",
        "cp",
        "--python-version",
        _PIP_PYTHON_VERSION,
        "--only-binary=:all:",
        "--target",
        str(target),
        *requirements,
    ]


@jsii.implements(ILocalBundling)
class LayerBundler:
    """Builds the layer directory tree (`python/...`) in the asset output directory with pip, no Docker."""

    def __init__(self, source: Path = LAYER_SOURCE) -> None:
        self._source = source

    def try_bundle(self, output_dir: str, options: BundlingOptions) -> bool:
        target = Path(output_dir) / "python"
        subprocess.run(pip_install_command(target, layer_requirements()), check=True)  # noqa: S603
        shutil.copytree(
            self._source / LIBRARY_PACKAGE,
            target / LIBRARY_PACKAGE,
            ignore=_IGNORED_FILES,
            dirs_exist_ok=True,
        )
        return True


class Layer(Construct):
    """The `benchgen` library plus its pinned dependencies, for Python 3.13 on arm64."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        code = lambda_.Code.from_asset(
            str(LAYER_SOURCE),
            exclude=["**/__pycache__", "**/*.pyc"],
            bundling=BundlingOptions(
                # Only used if local bundling declines; LayerBundler never does, so Docker is never needed.
                image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.13"),
                # jsii passes the options as one positional struct, not the keywords its stub declares.
                local=LayerBundler(),  # type: ignore[arg-type]
            ),
        )
        self.layer = lambda_.LayerVersion(
            self,
            "Library",
            code=code,
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="benchgen library with pydantic, pydantic-settings, pyyaml and aws-lambda-powertools",
        )
