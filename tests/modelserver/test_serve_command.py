"""``benchgen model serve`` as a user starts it: a real process that prints where it listens, answers
there, keeps the API key to itself, and refuses a hub id before loading anything."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cli.main import main

KEY = "serve-key-51d7"


def test_help_says_how_many_requests_a_batch_holds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["model", "serve", "--help"])

    text = " ".join(capsys.readouterr().out.split())
    assert "--max-batch MAX_BATCH most chat requests generated together in one batch (default 8)" in text


def test_the_command_serves_until_stopped_and_never_prints_the_key(tiny_model: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    command = [sys.executable, "-m", "cli.main", "model", "serve", "--model", str(tiny_model), "--port", "0"]
    command += ["--work", str(tmp_path / "work"), "--api-key-file", str(key_file), "--max-batch", "3"]
    errors = tmp_path / "stderr"
    with errors.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        serving = lines[-1]
        base_url = serving.split(" at ")[1].split(" ")[0]
        request = urllib.request.Request(base_url + "/models", headers={"Authorization": f"Bearer {KEY}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            listed = json.loads(response.read())
    finally:
        process.terminate()
        rest, _ = process.communicate(timeout=60)

    assert serving.startswith("Serving tiny-chat at http://127.0.0.1:")
    assert "batching up to 3 chat requests" in serving
    assert "on cpu; generating with ctranslate2 (auto: CTranslate2 on the CPU);" in serving
    assert [m["id"] for m in listed["data"]] == ["tiny-chat"]
    assert process.returncode == 0
    assert KEY not in "".join(lines) + rest + errors.read_text()


# A program that runs the server as its child (as the real loop does), prints where it serves, and waits.
PARENT = """
import sys, time
from pathlib import Path
from cli.model_process import ModelServerProcess
server = ModelServerProcess(sys.argv[1], name="tiny-chat", work=Path(sys.argv[2]), max_batch=1).__enter__()
server.wait_until_ready()
print(server.base_url, flush=True)
time.sleep(600)
"""


def _answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=5):
            return True
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def test_a_server_whose_parent_is_killed_stops_rather_than_serve_on(tiny_model: Path, tmp_path: Path) -> None:
    # given a program serving the model as its child
    work = tmp_path / "work"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tiny_model), str(work)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    base_url = parent.stdout.readline().strip()
    assert _answers(base_url)

    # when the program is killed, with no chance to stop its child
    parent.kill()
    parent.wait(timeout=60)

    # then the server notices, says so in its log, and stops answering
    deadline = time.monotonic() + 60
    while _answers(base_url) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _answers(base_url)
    assert f"The parent process {parent.pid} ended: stopping." in (work / "server.log").read_text()


def test_a_hub_id_fails_at_once_with_what_to_pass(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "model", "serve", "--model", "meta-llama/Llama-3.1-8B"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )

    assert done.returncode == 2
    assert "never downloads weights from a hub" in done.stderr
