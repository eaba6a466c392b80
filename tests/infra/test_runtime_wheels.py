"""Each runtime's pins resolve for its Lambda image: binary wheels for the image's CPython on arm64, no more.

pip downloads the pinned set with its dependencies, as the image's build would install it: a runtime's set
into a folder of its own run (wheels left from earlier pins would read as part of the set; pip's cache keeps
a rerun from downloading them again), the sandbox handler's under build/ so a rerun only asks the index.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchgen.bundle.runtime import RUNTIMES, Runtime, canonical_name
from infra.constructs.layer import CONSTRAINTS, LAMBDA_TARGET, REPO_ROOT, layer_packages
from infra.constructs.sandbox_image import IMAGE_PLATFORMS

pytestmark = pytest.mark.deployed

WHEELS = REPO_ROOT / "build" / "runtime-wheels"


@pytest.mark.parametrize("runtime", RUNTIMES.values(), ids=lambda runtime: runtime.name)
def test_the_runtimes_pins_are_the_whole_binary_set_for_lambdas_python(
    runtime: Runtime, tmp_path: Path
) -> None:
    # Given the runtime's pins, resolved with their dependencies for the image's interpreter
    folder = tmp_path / runtime.name
    folder.mkdir()
    done = _download_for_image(runtime.python, folder, "--requirement", str(runtime.requirements))

    # Then pip found a wheel for every one, and the set needs nothing it does not pin
    assert done.returncode == 0, done.stderr[-2000:]
    pins = runtime.pins()
    wheels = {
        canonical_name(wheel.name.split("-")[0]): wheel.name.split("-")[1] for wheel in folder.glob("*.whl")
    }
    assert {name: wheels.get(name) for name in pins} == pins
    assert sorted(set(wheels) - set(pins)) == []
    assert [
        wheel.name
        for wheel in folder.glob("*.whl")
        if canonical_name(wheel.name.split("-")[0]) in pins and not _fits(wheel.name, runtime.python)
    ] == []


def _fits(wheel: str, python_version: str) -> bool:
    """Whether a wheel's tags run on that CPython on arm64 Linux (pure Python ones anywhere); a stable-ABI
    wheel (abi3) for an earlier CPython 3 runs on it too."""
    cpython = "cp" + python_version.replace(".", "")
    python, abi, platform = Path(wheel).stem.split("-")[-3:]
    abis = abi.split(".")
    return (
        any(
            tag == cpython or tag.startswith("py3") or (tag.startswith("cp3") and "abi3" in abis)
            for tag in python.split(".")
        )
        and any(tag in {"none", "abi3", cpython} for tag in abis)
        and any(tag == "any" or tag.endswith("aarch64") for tag in platform.split("."))
    )


@pytest.mark.parametrize("python", sorted({runtime.python for runtime in RUNTIMES.values()}))
def test_the_sandbox_handlers_packages_have_binary_wheels_for_each_images_python(python: str) -> None:
    # Given the layer's package set, which each sandbox image installs for its handler with the image's pip
    folder = WHEELS / f"sandbox-handler-{python}"
    folder.mkdir(parents=True, exist_ok=True)
    requirements = folder / "requirements.txt"
    requirements.write_text("\n".join(layer_packages(LAMBDA_TARGET)) + "\n", encoding="utf-8")

    # When pip resolves it for that Python on arm64, binary wheels only
    done = _download_for_image(
        python, folder, "--constraint", str(CONSTRAINTS), "--requirement", str(requirements)
    )

    # Then every package has one
    assert done.returncode == 0, done.stderr[-2000:]


def _download_for_image(python: str, folder: Path, *requirements: str) -> subprocess.CompletedProcess[str]:
    """pip downloading ``requirements`` with their dependencies into ``folder``, as the image of that
    CPython on arm64 would install them: binary wheels only."""
    platforms = [option for platform in IMAGE_PLATFORMS[python] for option in ("--platform", platform)]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--only-binary=:all:",
            *platforms,
            "--implementation",
            "cp",
            "--python-version",
            python,
            "--dest",
            str(folder),
            *requirements,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
