"""The real loop's model server process: a server that cannot start says why, and leaves no process."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from cli.model_process import ModelServerProcess, missing_model_modules


def test_a_server_that_exits_before_answering_is_reported_with_its_log(tmp_path: Path) -> None:
    # given a model server asked for weights that exist nowhere
    server = ModelServerProcess(str(tmp_path / "no-such-weights"), name="nothing", work=tmp_path, max_batch=1)

    # when it is started and waited for
    with pytest.raises(RuntimeError) as raised, server:
        server.wait_until_ready()

    # then the error names its exit code and points at its log, which is kept, and it no longer runs
    assert "the model server exited with code 2 before answering" in str(raised.value)
    assert str(server.log_path) in str(raised.value)
    assert server.log_path.read_text(encoding="utf-8").strip()
    assert server.pid is not None and not server.running


def test_the_real_loop_goes_with_the_loop(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--real"])

    assert code == 2
    assert "--real goes with --loop" in capsys.readouterr().out


def test_the_real_loop_names_what_to_install_when_the_model_stack_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an interpreter without torch
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None if name == "torch" else object())

    # when the real loop is asked for
    code = main(["demo", "--loop", "--real", "--out", str(tmp_path)])

    # then it says what is missing and how to install it, and starts nothing
    assert code == 2
    assert missing_model_modules() == ["torch"]
    printed = capsys.readouterr().out
    assert "the real loop needs torch" in printed and "make install" in printed
    assert not (tmp_path / "model-server").exists()
