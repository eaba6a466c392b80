"""Keep the jsii runtime's Node.js release banners off the terminal.

CDK's Python package runs Node.js through jsii, which prints a banner on every start when the Node.js
release is deprecated or past its end of life for jsii (Node 20 since 2026-10-30). jsii's Python side
copies those lines to stderr as Python byte reprs (`b'!!  Node 20 is end-of-life ...\\n'`), a dozen of them
before every synthesis. Synthesis works on that release (the project supports Node.js 20+; README.md
says which releases are current), so the banner tells the user nothing they can act on mid-command.
"""

from __future__ import annotations

import os
import shutil
import subprocess

DEPRECATED = "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION"
# Takes the major versions to keep quiet about, comma separated.
END_OF_LIFE = "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"


def node_major_version(node: str | None = None) -> str | None:
    """The major version of the Node.js jsii will start (``JSII_NODE``, else ``node`` on PATH)."""
    found = shutil.which(node or os.environ.get("JSII_NODE", "node"))
    if found is None:
        return None
    try:
        printed = subprocess.run(  # noqa: S603 (the node executable found on PATH, one fixed flag)
            [found, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    major = printed.strip().removeprefix("v").split(".", 1)[0]
    return major if major.isdigit() else None


def silence_node_release_banners() -> None:
    """Tell jsii not to announce the running Node.js release; a choice made in the environment wins."""
    os.environ.setdefault(DEPRECATED, "1")
    if END_OF_LIFE not in os.environ:
        major = node_major_version()
        if major is not None:
            os.environ[END_OF_LIFE] = major
