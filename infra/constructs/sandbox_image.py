"""A sandbox function's container image, one per runtime, staged for a Docker build that ``cdk deploy`` runs.

Synthesis only writes the build folder (no Docker engine needed): ``functions/sandbox/Dockerfile``, the
function's files as its zip asset would ship them (``task/``), the library (``benchgen/``), the layer's
exact package set (``requirements.txt``, pinned by ``constraints.txt``) and the runtime's pins
(``runtime.txt``, the same file the local environment is made from). The image is a container
rather than a zip function for one reason: Codabench programs name ``/app/...`` paths, and only an image
can make ``/app`` exist (a link into ``/tmp``, the one place Lambda lets a function write).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from aws_cdk import Stage
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from benchgen.bundle.runtime import RUNTIMES
from infra.constructs.layer import CONSTRAINTS, LAMBDA_TARGET, LAYER_SOURCE, LIBRARY_PACKAGE, layer_packages

DOCKERFILE = "Dockerfile"
RUNTIME_PINS = "runtime.txt"
# What the image's pip accepts, by its Python, on arm64: Lambda's Python 3.13 runs on Amazon Linux 2023
# (glibc 2.34), where numba and llvmlite publish only manylinux_2_28 wheels, the rest manylinux2014 ones;
# its Python 3.11 on Amazon Linux 2 (glibc 2.26), which takes manylinux2014 (glibc 2.17) wheels alone.
IMAGE_PLATFORMS = {
    "3.13": ("manylinux_2_28_aarch64", "manylinux2014_aarch64"),
    "3.11": ("manylinux2014_aarch64", "manylinux_2_17_aarch64"),
}
BUILD_FOLDER = "sandbox-image-build"
HANDLER = "handler.handler"
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "tests", DOCKERFILE)


def stage_build_folder(function_dir: Path, target: Path, runtime: str) -> Path:
    """Write the image's build folder for ``runtime`` into the empty ``target``."""
    shutil.copyfile(function_dir / DOCKERFILE, target / DOCKERFILE)
    shutil.copytree(function_dir, target / "task", ignore=_IGNORED)
    shutil.copytree(
        LAYER_SOURCE / LIBRARY_PACKAGE,
        target / LIBRARY_PACKAGE,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"),
    )
    shutil.copyfile(CONSTRAINTS, target / "constraints.txt")
    (target / "requirements.txt").write_text(
        "\n".join(layer_packages(LAMBDA_TARGET)) + "\n", encoding="utf-8"
    )
    shutil.copyfile(RUNTIMES[runtime].requirements, target / RUNTIME_PINS)
    return target


def image_build_args(runtime: str) -> dict[str, str]:
    """The Dockerfile's build arguments for ``runtime``'s image: its name and the Python of its base image."""
    return {"RUNTIME": runtime, "PYTHON": RUNTIMES[runtime].python}


def sandbox_image_code(scope: Construct, function_dir: Path, runtime: str) -> lambda_.DockerImageCode:
    """The image code for ``function_dir`` with ``runtime``'s environment (built for arm64 from Lambda's image
    of the runtime's Python, running ``handler.handler``), its build folder staged beside the app's other
    assets."""
    stage = Stage.of(scope)
    if stage is None:
        raise ValueError("the sandbox function's image is staged inside a CDK app; build it in one")
    folder = Path(stage.asset_outdir) / f"{BUILD_FOLDER}-{runtime}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    stage_build_folder(function_dir, folder, runtime)
    return lambda_.DockerImageCode.from_image_asset(
        str(folder),
        cmd=[HANDLER],
        platform=ecr_assets.Platform.LINUX_ARM64,
        build_args=image_build_args(runtime),
    )
