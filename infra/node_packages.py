"""The npm packages the build and the checks run on Node.js (the runtime CDK needs anyway), each pinned by
a folder of its own (package.json and package-lock.json) and installed there when first needed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path


def node_tool(name: str) -> str:
    """The path of `node` or `npm`."""
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(
            f"{name} is not on PATH: install Node.js, which the CDK CLI, the layer's bytecode and the local "
            "cloud's policy checks run on"
        )
    return found


def installed_package(folder: Path, package: str) -> Path:
    """``folder/node_modules/<package>``, installed first with ``npm ci`` (exactly the lock file's tree)
    where it is missing or another version than ``folder/package.json`` pins."""
    wanted = json.loads((folder / "package.json").read_text(encoding="utf-8"))["dependencies"][package]
    installed = folder / "node_modules" / package
    manifest = installed / "package.json"
    current = json.loads(manifest.read_text(encoding="utf-8"))["version"] if manifest.exists() else None
    if current != wanted:
        subprocess.run(  # noqa: S603
            [node_tool("npm"), "ci", "--no-audit", "--no-fund", "--prefix", str(folder)], check=True
        )
    return installed
