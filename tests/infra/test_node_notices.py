"""CDK's Node.js process starts without printing jsii's release banner as Python byte reprs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.node_notices import DEPRECATED, END_OF_LIFE, node_major_version, silence_node_release_banners

ROOT = Path(__file__).resolve().parents[2]
START_CDK = "from infra.node_notices import silence_node_release_banners as s; s(); import aws_cdk"


@pytest.mark.parametrize(
    "command",
    [["-c", START_CDK], ["-m", "infra.app"]],
    ids=["as the commands start it", "as cdk synth runs the app"],
)
def test_starting_cdk_prints_no_byte_reprs_and_no_release_banner(command: list[str], tmp_path: Path) -> None:
    # given a shell that has chosen nothing about jsii's banners
    environment = {name: value for name, value in os.environ.items() if not name.startswith("JSII_")}
    environment["CDK_OUTDIR"] = str(tmp_path / "cdk.out")

    # when CDK's Node.js process is started the way synthesis starts it
    started = subprocess.run(
        [sys.executable, *command], cwd=ROOT, env=environment, capture_output=True, timeout=300
    )

    # then it started, and stderr holds no b'...' line and no banner
    assert started.returncode == 0, started.stderr.decode(errors="replace")
    printed = started.stderr.decode(errors="replace")
    assert "b'" not in printed
    assert "end-of-life" not in printed
    assert "!!" not in printed


def test_the_major_version_is_read_from_the_node_jsii_starts(tmp_path: Path) -> None:
    # given a node that answers --version as Node.js does
    node = tmp_path / "node"
    node.write_text("#!/bin/sh\necho v20.20.2\n", encoding="utf-8")
    node.chmod(0o755)

    # when its major version is asked for, then it is the number before the first dot
    assert node_major_version(str(node)) == "20"
    assert node_major_version(str(tmp_path / "no-such-node")) is None


def test_a_choice_already_in_the_environment_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # given a user who asked jsii to stay quiet about Node 18 only
    monkeypatch.setenv(END_OF_LIFE, "18")
    monkeypatch.setenv(DEPRECATED, "0")

    # when the banners are silenced, then their choice stands
    silence_node_release_banners()
    assert os.environ[END_OF_LIFE] == "18"
    assert os.environ[DEPRECATED] == "0"
