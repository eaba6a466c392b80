"""What `benchgen local` prints once the local cloud is up."""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cli.local import logged_to, run_transitions_on, summary


def test_the_summary_names_every_state_machine_of_the_stack() -> None:
    prefix = "arn:aws:states:us-east-1:123456789012:stateMachine:benchgen-local-"
    machines = {name: prefix + name for name in ("ArtifactPipeline", "PreparationPipeline")}
    cloud = SimpleNamespace(
        endpoint_url="http://127.0.0.1:5000",
        bucket="data",
        table_names={},
        bus_name="benchgen",
        state_machine_arns=machines,
        user_pool_id="pool",
        client_id="client",
        region="us-east-1",
    )
    console = "http://127.0.0.1:8081 (sign in as the demo user)"
    printed = summary(cloud, "http://127.0.0.1:8000/v1", "token", "password", console).splitlines()
    assert f"  Web console:        {console}" in printed
    assert f"  State machine ArtifactPipeline: {machines['ArtifactPipeline']}" in printed
    assert f"  State machine PreparationPipeline: {machines['PreparationPipeline']}" in printed


def test_the_summary_exports_the_api_address_and_names_the_log(tmp_path: Path) -> None:
    cloud = SimpleNamespace(
        endpoint_url="http://127.0.0.1:5000",
        bucket="data",
        table_names={},
        bus_name="benchgen",
        state_machine_arns={},
        user_pool_id="pool",
        client_id="client",
        region="us-east-1",
    )
    log = tmp_path / "up.log"
    printed = summary(cloud, "http://127.0.0.1:8080", "tok", "pw", "console", log).splitlines()
    assert "  export TOKEN=tok" in printed
    assert "  export API=http://127.0.0.1:8080" in printed
    assert f"  Log:                {tmp_path / 'up.log'}" in printed


def test_a_runs_transitions_are_one_terminal_line_each() -> None:
    from benchgen.aws.transitions import log_transitions

    # given the terminal local up keeps for run transitions
    terminal = io.StringIO()
    with run_transitions_on(terminal):
        # when a run is created, starts, fails, and its artifact is given up on
        log_transitions("r1", {}, {"environment_id": "gsm8k-tr", "status": "Pending"})
        log_transitions("r1", {"environment_id": "gsm8k-tr", "status": "Pending"}, {"status": "Running"})
        log_transitions(
            "r1",
            {"environment_id": "gsm8k-tr", "status": "Running"},
            {"status": "Failed", "failure_reason": "predictions.json is empty"},
        )
        log_transitions("r1", {"environment_id": "gsm8k-tr", "status": "Failed"}, {"status": "Failed"})
    log_transitions("r1", {"environment_id": "gsm8k-tr", "status": "Failed"}, {"status": "Running"})

    # then each change is one line, with the reason a failure gave, and nothing once local up has stopped
    lines = [line.split(" ", 1)[1] for line in terminal.getvalue().splitlines()]
    assert lines == [
        "run r1 (gsm8k-tr): new -> Pending",
        "run r1 (gsm8k-tr): Pending -> Running",
        "run r1 (gsm8k-tr): Running -> Failed: predictions.json is empty",
    ]


def test_access_logs_and_prints_go_to_the_log_file_and_not_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given local up's log file
    log = tmp_path / "logs" / "local-up.log"

    # when moto's server logs an access line and a function prints while the log is in place
    with logged_to(log):
        logging.getLogger("werkzeug").info('127.0.0.1 - - "PUT /bucket/key HTTP/1.1" 200 -')
        print('{"level":"INFO","message":"upload processed"}')
        sys.stderr.write('api 127.0.0.1 "GET /runs HTTP/1.1" 200 -\n')
    print("after")

    # then the file holds them and the terminal only what came after
    written = log.read_text(encoding="utf-8")
    assert '"PUT /bucket/key HTTP/1.1" 200' in written
    assert "upload processed" in written
    assert '"GET /runs HTTP/1.1" 200' in written
    captured = capsys.readouterr()
    assert captured.out == "after\n"
    assert "HTTP/1.1" not in captured.err
