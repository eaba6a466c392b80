"""Node.js tools and the npm packages a folder of this repository pins, installed on demand.

Free of CDK imports: the local cloud uses it without starting jsii.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path


def node_tool(name: str) -> str:
    """The path of Node.js's `name` (node, npm), which CDK needs as well."""
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(
            f"{name} is not on PATH: the layer's bytecode and the local cloud's policy checks run on "
            "Node.js, which CDK needs too"
        )
    return found


def installed_node_package(directory: Path, package: str) -> None:
    """Install `directory`'s pinned npm packages (its package-lock.json, with `npm ci`) where `package` is
    missing or another version than its package.json pins."""
    wanted = json.loads((directory / "package.json").read_text(encoding="utf-8"))["dependencies"]
    installed = directory / "node_modules" / package / "package.json"
    current = json.loads(installed.read_text(encoding="utf-8"))["version"] if installed.exists() else None
    if current != wanted[package]:
        subprocess.run(  # noqa: S603
            [node_tool("npm"), "ci", "--no-audit", "--no-fund", "--prefix", str(directory)], check=True
        )
