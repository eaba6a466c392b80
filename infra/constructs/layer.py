"""The shared library as a Lambda layer, built on this machine without Docker."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.node_packages import installed_package, node_tool

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYER_SOURCE = REPO_ROOT / "layers"
LIBRARY_PACKAGE = "benchgen"
CONSTRAINTS = REPO_ROOT / "constraints.txt"

RUNTIME = lambda_.Runtime.PYTHON_3_13
ARCHITECTURE = lambda_.Architecture.ARM_64
# The Lambda Python 3.11+ runtimes ship boto3 and exactly its dependencies as "runtime-included libraries"
# in /var/lang/lib/python3.x/site-packages, which comes after /var/task and /opt/python on sys.path. The
# layer leaves these out: bundling a second botocore would only grow the layer. The runtime's versions are
# older than our pins, so the layer's packages must accept them (aws-xray-sdk and powertools do). The
# deployed-import test stands this exact set in for the runtime, so a package assumed here that the
# runtime lacks fails that test.
RUNTIME_PROVIDED = frozenset(
    {"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"}
)
_IGNORED_FILES = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")
# Where Lambda puts a layer's python/ folder: the path the bytecode's tracebacks name.
LAYER_PATH = "/opt/python"
# The CPython 3.13 that compiles the layer's bytecode for the runtime (see infra/bytecode/compile.mjs).
BYTECODE_COMPILER = REPO_ROOT / "infra" / "bytecode"


@dataclass(frozen=True)
class PipTarget:
    """The interpreter pip picks wheels for: Lambda's, or (no platform) the Python running pip."""

    platform: str | None = None
    python_version: str | None = None

    def options(self) -> list[str]:
        # Binary wheels only, for both: a source build would compile for this machine, not the target.
        options = ["--only-binary=:all:"]
        if self.platform is not None and self.python_version is not None:
            options += [
                "--platform",
                self.platform,
                "--implementation",
                "cp",
                "--python-version",
                self.python_version,
            ]
        return options


LAMBDA_TARGET = PipTarget(platform="manylinux2014_aarch64", python_version="3.13")
THIS_MACHINE = PipTarget()


def canonical_name(name: str) -> str:
    """A distribution name as pip compares them (PEP 503): `PyYAML` and `pyyaml` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned_dependencies(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pins: list[str] = []
    for requirement in project["dependencies"]:
        if "==" not in requirement:
            raise ValueError(f"layer dependency {requirement!r} must be pinned with == in {pyproject}")
        pins.append(requirement.strip())
    return pins


def _is_runtime_provided(requirement: str) -> bool:
    return canonical_name(requirement.split("==", 1)[0]) in RUNTIME_PROVIDED


def layer_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """The library's pinned runtime dependencies from pyproject.toml, less what the Lambda runtime ships."""
    return [pin for pin in _pinned_dependencies(pyproject) if not _is_runtime_provided(pin)]


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """The pinned dependencies the Lambda runtime provides instead of the layer (boto3)."""
    return [pin for pin in _pinned_dependencies(pyproject) if _is_runtime_provided(pin)]


def _pip_install(*arguments: str) -> list[str]:
    """This Python's pip installing quietly, pinned by constraints.txt, with `arguments`."""
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--quiet",
        "-c",
        str(CONSTRAINTS),
        *arguments,
    ]


def resolve(requirements: list[str], target: PipTarget) -> list[str]:
    """Every distribution the requirements install on `target`, as name==version, pinned by constraints.txt.

    pip resolves without installing and reports what it would install (it downloads only metadata). The
    report goes to a file, not stdout: pip prints a report on stdout through rich, which colours it
    whenever FORCE_COLOR is set, to any value, and the CDK CLI runs its app with FORCE_COLOR=0.
    """
    with tempfile.TemporaryDirectory(prefix="benchgen-resolve-") as scratch:
        report_file = Path(scratch) / "report.json"
        command = _pip_install(
            "--dry-run", "--ignore-installed", "--report", str(report_file), *target.options(), *requirements
        )
        subprocess.run(command, check=True, capture_output=True, text=True)  # noqa: S603
        report = json.loads(report_file.read_text(encoding="utf-8"))
    return sorted(
        f"{canonical_name(item['metadata']['name'])}=={item['metadata']['version']}"
        for item in report["install"]
    )


def layer_packages(target: PipTarget) -> list[str]:
    """The layer's package set: the library's dependencies and theirs, less what the runtime provides."""
    return [pin for pin in resolve(layer_requirements(), target) if not _is_runtime_provided(pin)]


def pip_install_command(directory: Path, packages: list[str], target: PipTarget) -> list[str]:
    """pip installing exactly `packages` (an already resolved set, hence --no-deps) into `directory`."""
    return _pip_install("--no-compile", "--no-deps", *target.options(), "--target", str(directory), *packages)


def _installed_compiler() -> Path:
    """infra/bytecode's compiler, with its pinned Pyodide."""
    installed_package(BYTECODE_COMPILER, "pyodide")
    return BYTECODE_COMPILER / "compile.mjs"


def compile_command(directory: Path, target: PipTarget) -> list[str]:
    """The command compiling every module under `directory` to bytecode for `target`'s interpreter.

    Lambda cannot write bytecode into a layer (read-only), so a layer without it compiles every module it
    imports at every cold start. The files are unchecked-hash ones (PEP 552): the layer's files are
    extracted with the zip's timestamps, which a timestamp-checked file would take for stale. For this
    machine's Python, that Python compiles; for Lambda's CPython 3.13, Pyodide's build of it (a native
    3.13 is in no registry this project installs from).
    """
    if target.python_version is None:
        return [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            "-d",
            LAYER_PATH,
            "--invalidation-mode",
            "unchecked-hash",
            str(directory),
        ]
    return [node_tool("node"), str(_installed_compiler()), str(directory), LAYER_PATH, target.python_version]


def build_layer(output_dir: Path, target: PipTarget, source: Path = LAYER_SOURCE) -> Path:
    """The layer's tree under output_dir/python: its package set for `target`, the library, and the
    bytecode of both for `target`'s interpreter."""
    python_dir = output_dir / "python"
    subprocess.run(pip_install_command(python_dir, layer_packages(target), target), check=True)  # noqa: S603
    shutil.copytree(
        source / LIBRARY_PACKAGE, python_dir / LIBRARY_PACKAGE, ignore=_IGNORED_FILES, dirs_exist_ok=True
    )
    subprocess.run(compile_command(python_dir, target), check=True)  # noqa: S603
    return python_dir


@jsii.implements(ILocalBundling)
class LayerBundler:
    """Builds the layer directory tree (`python/...`) in the asset output directory with pip, no Docker."""

    def __init__(self, source: Path = LAYER_SOURCE) -> None:
        self._source = source

    def try_bundle(self, output_dir: str, options: BundlingOptions) -> bool:
        build_layer(Path(output_dir), LAMBDA_TARGET, self._source)
        return True


class Layer(Construct):
    """The `benchgen` library plus its pinned dependencies, for Python 3.13 on arm64."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        code = lambda_.Code.from_asset(
            str(LAYER_SOURCE),
            # Named by what was built, not by layers/ alone: a changed dependency set is a new asset, so
            # `cdk deploy` publishes a new layer version instead of keeping the old one. Nothing is
            # excluded: the patterns apply to the built tree's hash too, and changed bytecode is a new
            # layer as well (the bundler leaves layers/' own __pycache__ behind).
            asset_hash_type=AssetHashType.OUTPUT,
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
            description="benchgen library with pydantic, pyyaml, msgspec, aws-lambda-powertools "
            "and aws-xray-sdk",
        )
