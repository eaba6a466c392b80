"""The sandbox function's container image, staged for a Docker build that ``cdk deploy`` runs.

Synthesis only writes the build folder (no Docker engine needed): ``functions/sandbox/Dockerfile``, the
function's files as its zip asset would ship them (``task/``), the library (``benchgen/``), and the
layer's exact package set (``requirements.txt``, pinned by ``constraints.txt``). The image is a container
rather than a zip function for one reason: Codabench programs name ``/app/...`` paths, and only an image
can make ``/app`` exist (a link into ``/tmp``, the one place Lambda lets a function write).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_lambda as lambda_

from infra.constructs.layer import CONSTRAINTS, LAMBDA_TARGET, LAYER_SOURCE, LIBRARY_PACKAGE, layer_packages

DOCKERFILE = "Dockerfile"
HANDLER = "handler.handler"
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "tests", DOCKERFILE)


def stage_build_folder(function_dir: Path, target: Path) -> Path:
    """Write the image's build folder into the empty ``target``."""
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
    return target


def sandbox_image_code(function_dir: Path) -> lambda_.DockerImageCode:
    """The image code for ``function_dir`` (built for arm64, running ``handler.handler``)."""
    folder = stage_build_folder(function_dir, Path(tempfile.mkdtemp(prefix="sandbox-image-")))
    return lambda_.DockerImageCode.from_image_asset(
        str(folder), cmd=[HANDLER], platform=ecr_assets.Platform.LINUX_ARM64
    )
