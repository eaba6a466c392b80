"""Every command in README.md and in its walkthrough (docs/walkthrough.md) is a tested one.

Their fenced blocks each say what they hold: `text` (a picture, not commands), `sh` (commands shown:
each must name a make target the Makefile has, or a `benchgen` command that parses) and `sh local-cloud`
(run here, in order, against `benchgen local up` started as a user starts it, with the two variables it
tells the user to export). A command shown that drifts from the code fails one of these tests.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# The pages whose commands are shown to a newcomer: the README, then the walkthrough it links to.
PAGES = (README, ROOT / "docs" / "walkthrough.md")
BENCHGEN = ROOT / ".venv" / "bin" / "benchgen"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
KINDS = {"text", "sh", "sh local-cloud"}
SETTINGS_THAT_CHANGE_THE_CLOUD = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS")
STARTED = "Ctrl-C stops it"


def fences() -> list[tuple[str, str]]:
    """(info string, body) of every fenced block of the pages, in order."""
    return [fence for page in PAGES for fence in FENCE.findall(page.read_text(encoding="utf-8"))]


def blocks(kind: str) -> list[str]:
    return [body for info, body in fences() if info.strip() == kind]


def commands(block: str) -> list[str]:
    """The block's commands: lines joined at a trailing backslash, comments and blank lines left out."""
    joined = block.replace("\\\n", " ")
    return [line.split(" #", 1)[0].strip() for line in joined.splitlines() if line.strip() and line[0] != "#"]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, re.MULTILINE))


def test_every_fenced_block_says_what_it_holds() -> None:
    infos = [info.strip() for info, _ in fences()]
    assert blocks("sh local-cloud"), "neither page has a local-cloud block to run"
    assert [info for info in infos if info not in KINDS] == []


def test_the_set_up_is_exactly_two_commands() -> None:
    readme = README.read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    shown = [body for info, body in FENCE.findall(section) if info.strip() == "sh"]
    assert [command.split()[:2] for command in commands(shown[0])] == [["make", "demo"], ["make", "test"]]


def test_the_two_commands_are_on_the_first_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    first = next(number for number, line in enumerate(lines, 1) if line.startswith("make demo"))
    assert first <= 30, f"`make demo` is on line {first} of README.md; a newcomer should see it unscrolled"


def test_the_readme_leaves_the_detail_one_link_away() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move the detail to docs/walkthrough.md"


def test_every_command_shown_exists() -> None:
    targets = make_targets()
    for block in blocks("sh"):
        for command in commands(block):
            words = shlex.split(command)
            if words[0] == "make":
                assert words[1] in targets, f"`{command}` is shown: the Makefile has no {words[1]!r} target"
                continue
            assert words[0] == ".venv/bin/benchgen", f"`{command}` is shown, and no test checks it"
            parsed = subprocess.run(
                [str(BENCHGEN), *words[1:], "--help"], capture_output=True, text=True, timeout=120
            )
            assert parsed.returncode == 0, f"`{command}` does not parse: {parsed.stderr}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Walkthrough:
    terminal: str
    log: str
    output: str
    errors: str
    returncode: int
    stopped_with: int | None


def _read_into(stream: IO[str], lines: list[str]) -> None:
    lines.extend(stream)


@contextmanager
def _children_take_ctrl_c() -> Iterator[None]:
    """What is started in the block takes Ctrl-C (SIGINT) as a command in a terminal's foreground does.

    A shell without job control that starts a command in the background (``make test &`` in a script) has
    it ignore SIGINT, and an ignored signal stays ignored in every process it starts: local up would never
    see this test's Ctrl-C and would be killed a minute later. A handler, unlike an ignored signal, is
    reset to the default when the child starts."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walkthrough]:
    """`benchgen local up` started as the walkthrough says, the pages' local-cloud blocks run against it in a
    scratch folder holding the checkout's examples, then local up stopped with Ctrl-C."""
    scratch = tmp_path_factory.mktemp("readme")
    (scratch / "examples").symlink_to(ROOT / "examples")
    log = scratch / "local-up.log"
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in SETTINGS_THAT_CHANGE_THE_CLOUD and not name.startswith("JSII_")
    }
    ports = [str(_free_port()) for _ in range(3)]
    command = [str(BENCHGEN), "local", "up", "--port", ports[0], "--api-port", ports[1]]
    command += ["--console-port", ports[2], "--log", str(log)]
    with _children_take_ctrl_c():
        process = subprocess.Popen(
            command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    printed: list[str] = []
    errors: list[str] = []
    readers = [
        threading.Thread(target=_read_into, args=(process.stdout, printed), daemon=True),
        threading.Thread(target=_read_into, args=(process.stderr, errors), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        deadline = time.monotonic() + 300
        while not any(STARTED in line for line in printed):
            assert process.poll() is None, "".join(printed + errors)
            assert time.monotonic() < deadline, "local up did not start in 300 s:\n" + "".join(printed)
            time.sleep(0.2)
        exports = dict(re.findall(r"^\s*export (TOKEN|API)=(\S+)$", "".join(printed), re.MULTILINE))
        assert set(exports) == {"TOKEN", "API"}, "local up no longer prints the exports the walkthrough names"
        script = "set -euo pipefail\n" + "\n".join(blocks("sh local-cloud"))
        ran = subprocess.run(
            ["bash", "-c", script],
            cwd=scratch,
            env={**environment, **exports},
            capture_output=True,
            text=True,
            timeout=300,
        )
        # The last run transition is written once the run has been recorded Completed; give it a moment.
        time.sleep(1)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        for reader in readers:
            reader.join(timeout=10)
    yield Walkthrough(
        terminal="".join(printed + errors),
        log=log.read_text(encoding="utf-8"),
        output=ran.stdout,
        errors=ran.stderr,
        returncode=ran.returncode,
        stopped_with=process.returncode,
    )


def test_the_readmes_commands_publish_an_environment_and_score_a_run(walkthrough: Walkthrough) -> None:
    assert walkthrough.returncode == 0, walkthrough.errors + walkthrough.output
    assert walkthrough.output.splitlines()[-2:] == ["Completed", "0.7"]


def test_local_up_shows_each_run_transition_on_the_terminal(walkthrough: Walkthrough) -> None:
    transitions = re.findall(r"run \w+ \(gsm8k-tr\): (\S+) -> (\w+)", walkthrough.terminal)
    assert transitions[0] == ("new", "Pending")
    assert ("Running", "Completed") in transitions


def test_local_up_keeps_access_logs_and_byte_reprs_off_the_terminal(walkthrough: Walkthrough) -> None:
    # jsii's Node.js banner, printed as Python byte reprs, is in neither the terminal nor the log
    assert "b'" not in walkthrough.terminal
    assert "b'!!" not in walkthrough.log
    assert "HTTP/1.1" not in walkthrough.terminal
    assert re.search(
        r'"PUT /[^ ]+/environments/gsm8k-tr/v1/bundle\.zip\?[^ ]+ HTTP/1\.1" 200', walkthrough.log
    )
    assert '"POST /runs HTTP/1.1" 201' in walkthrough.log


def test_ctrl_c_stops_local_up_after_draining(walkthrough: Walkthrough) -> None:
    assert walkthrough.stopped_with == 0
    assert "Stopping: waiting for running executions..." in walkthrough.terminal
