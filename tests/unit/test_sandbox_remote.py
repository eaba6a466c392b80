"""The sandbox function's round trip, with plain HTTP standing in for S3's presigned URLs."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from benchgen.programs import prepare_layout, run_program
from benchgen.sandbox.remote import RemoteSandbox
from functions.sandbox import handler as sandbox_handler
from tests.program_runs import run_in_layout, write_program


class Objects(http.server.BaseHTTPRequestHandler):
    """GET and PUT of whole bodies by path, like presigned object URLs."""

    stored: ClassVar[dict[str, bytes]] = {}

    def do_GET(self) -> None:
        body = self.stored.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def do_PUT(self) -> None:
        self.stored[self.path] = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def objects() -> Iterator[str]:
    Objects.stored = {}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Objects)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class HandlerInvoker:
    """Invokes the sandbox function's handler as Lambda would, with URLs to the stand-in object store."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.requests: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []

    def invoke(self, archive: Path, job: dict[str, Any], outputs: Path) -> dict[str, Any]:
        Objects.stored["/job.zip"] = archive.read_bytes()
        request = {
            "job_url": f"{self.base_url}/job.zip",
            "outputs_url": f"{self.base_url}/out.zip",
            "job": job,
        }
        self.requests.append(request)
        answer: dict[str, Any] = sandbox_handler.handler(request, None)
        self.answers.append(answer)
        outputs.write_bytes(Objects.stored["/out.zip"])
        return answer


def test_a_program_run_in_the_sandbox_function_returns_its_result_and_its_output(
    tmp_path: Path, objects: str
) -> None:
    # Given a program reading its reference data and writing scores, and a sandbox reached over HTTP
    layout = prepare_layout(tmp_path / "run")
    (layout.ref / "answer.txt").write_text("0.75")
    program = tmp_path / "program"
    program.mkdir()
    (program / "metadata.yaml").write_text("command: python $program/main.py $input $output\n")
    (program / "main.py").write_text(
        "import json, pathlib, sys\n"
        "value = float(pathlib.Path(sys.argv[1], 'ref', 'answer.txt').read_text())\n"
        "pathlib.Path(sys.argv[2], 'scores.json').write_text(json.dumps({'accuracy': value}))\n"
        "print('scored')\n"
    )
    invoker = HandlerInvoker(objects)

    # When it runs
    result = run_in_layout(program, layout, sandbox=RemoteSandbox(invoker))

    # Then the request carried only the URLs and the job, and the output came back through the PUT URL
    assert sorted(invoker.requests[0]) == ["job", "job_url", "outputs_url"]
    assert result.ok, result.stderr
    assert result.stdout == "scored\n"
    assert (layout.output / "scores.json").read_text() == '{"accuracy": 0.75}'


def test_output_full_of_control_characters_fits_the_synchronous_answer(tmp_path: Path, objects: str) -> None:
    # Given a program printing a MiB of NUL bytes on each stream (six bytes each once escaped in JSON)
    layout = prepare_layout(tmp_path / "run")
    program = tmp_path / "program"
    program.mkdir()
    (program / "metadata.yaml").write_text("command: python $program/main.py\n")
    (program / "main.py").write_text(
        "import sys\nsys.stdout.write(chr(0) * 2**20)\nsys.stderr.write(chr(0) * 2**20)\nsys.exit(2)\n"
    )
    invoker = HandlerInvoker(objects)

    # When it runs in the sandbox function
    result = run_in_layout(program, layout, sandbox=RemoteSandbox(invoker))

    # Then the answer stays far below Lambda's 6 MB, and the caller still gets the whole result
    assert len(json.dumps(invoker.answers[0])) < 1024
    assert invoker.answers[0]["returncode"] == 2
    assert (result.returncode, result.stdout_bytes, result.stderr_bytes) == (2, 2**20, 2**20)
    assert result.stdout == chr(0) * 2**20


def test_on_lambda_the_sandbox_leaves_nothing_in_tmp(
    tmp_path: Path, objects: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the handler as on Lambda: not root, /tmp shared with later invocations of a warm sandbox
    lambda_tmp = tmp_path / "lambda-tmp"
    lambda_tmp.mkdir()
    lambda_tmp.chmod(0o777)
    (lambda_tmp / "from-an-earlier-invocation").write_text("x")
    monkeypatch.setenv("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")
    monkeypatch.setattr(sandbox_handler, "LAMBDA_TMP", lambda_tmp)
    # Killing every descendant of the test process would be this test's own side effect: count the calls.
    sweeps: list[None] = []
    monkeypatch.setattr(sandbox_handler, "contain_strays", lambda: sweeps.append(None))
    monkeypatch.setattr("benchgen.sandbox.local.os.geteuid", lambda: 1000)
    layout = prepare_layout(tmp_path / "run")
    program = tmp_path / "program"
    program.mkdir()
    (program / "metadata.yaml").write_text("command: python $program/main.py\n")
    (program / "main.py").write_text(f"open({str(lambda_tmp / 'left-behind')!r}, 'w').write('x')\n")

    # When a program that writes into /tmp runs there
    result = run_program(
        program,
        input_dir=layout.input,
        output_dir=layout.output,
        shared_dir=layout.shared,
        ref_dir=layout.ref,
        res_dir=layout.res,
        time_limit=30,
        sandbox=RemoteSandbox(HandlerInvoker(objects)),
    )

    # Then /tmp is empty afterwards, and stray processes were swept before and after the program
    assert result.ok, result.stderr
    assert list(lambda_tmp.iterdir()) == []
    assert len(sweeps) == 2


def test_in_the_sandbox_function_a_program_may_write_its_folder_and_its_removed_numpy_names_come_back(
    tmp_path: Path, objects: str
) -> None:
    # Given a program that keeps a scratch file beside itself, then uses np.float and catches the error
    layout = prepare_layout(tmp_path / "run")
    script = """
    import numpy as np
    open("scratch.txt", "w").write("kept beside the program")
    try:
        np.float
    except AttributeError:
        print("fallback")
    """
    program = write_program(tmp_path, script)

    # When it runs in the sandbox function, in the scientific runtime (numpy 2)
    result = run_in_layout(
        program, layout, sandbox=RemoteSandbox(HandlerInvoker(objects)), runtime="scientific"
    )

    # Then it ran to its end, and the name it asked numpy for in vain came back with the result
    assert (result.ok, result.stdout) == (True, "fallback\n"), result.stderr
    assert result.removed_names == ("np.float",)
    assert result.numpy_version is not None and result.numpy_version.startswith("2.")
    assert not (program / "scratch.txt").exists()
