"""Hostile programs: each tries to escape, and each is contained and reported on the run.

They run as the machine runs them: as root here and in CI, where the program gets a uid of its own and a
private mount namespace; some checks only make sense there and are skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchgen.errors import ScoringError
from benchgen.programs import SCORING_APP, Layout, prepare_layout, program_job
from benchgen.sandbox import local
from benchgen.sandbox.runtimes import runtime_environment
from tests.program_runs import PROGRAM_VARIABLES, run_in_layout, write_program

ROOT = Path(__file__).resolve().parents[2]
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="a uid of its own for the program needs root")
SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIAHOSTILETEST0001",
    "AWS_SECRET_ACCESS_KEY": "hostile-test-secret-9f3c1e7a",
    "AWS_SESSION_TOKEN": "hostile-test-session-token-51d2",
}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return prepare_layout(tmp_path / "run")


STEALER = """
    import json, os, pathlib, sys
    found = {"self": dict(os.environ)}
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                found[pid] = pathlib.Path("/proc", pid, "environ").read_bytes().decode(errors="replace")
            except OSError as error:
                found[pid] = f"denied: {error.strerror}"
    dump = json.dumps(found)
    print(dump)
    print(dump, file=sys.stderr)
    out = pathlib.Path(sys.argv[2])
    (out / "stolen.txt").write_text(dump)
    (out / "detailed_results.html").write_text(f"<html><body><pre>{dump}</pre></body></html>")
    verdict = {"case_id": "q1", "passed": False, "answered": True, "gold": dump, "prediction": dump}
    (out / "verdicts.jsonl").write_text(json.dumps(verdict) + "\\n")
    read = sum(1 for text in found.values() if isinstance(text, str) and not text.startswith("denied"))
    (out / "scores.json").write_text(json.dumps({"accuracy": read}))
"""

HOST = """
import ctypes, json, sys
from pathlib import Path
from benchgen.environment import open_environment
from benchgen.ingest import ingest
from benchgen.scoring.engine import score_predictions

work = Path(sys.argv[1])
env = open_environment(work / "bundle", work / "env")
submission = work / "predictions.json"
ingest(env, submission, work / "ingested", workdir=work / "ingest-work")
ingested = work / "ingested" / "prediction_output.zip"
report = score_predictions(env, ingested, work / "out", workdir=work / "score-work")
print(json.dumps({"dumpable": ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)}))
"""


def _stealer_bundle(root: Path) -> None:
    (root / "reference").mkdir(parents=True)
    (root / "reference" / "cases.jsonl").write_text('{"id": "q1", "question": "1+1", "answer": "2"}\n')
    (root / "scoring_program").mkdir()
    (root / "scoring_program" / "score.py").write_text(textwrap.dedent(STEALER))
    (root / "scoring_program" / "metadata.yaml").write_text(
        "command: python $program/score.py $input $output\n"
    )
    (root / "competition.yaml").write_text(
        "version: 2\ntitle: Stealer\ntasks:\n  - index: 0\n    reference_data: reference\n"
        "    scoring_program: scoring_program\nphases:\n  - index: 0\n    tasks: [0]\n"
        "    execution_time_limit: 60\nleaderboards:\n  - columns:\n"
        "      - {title: Acc, key: accuracy, index: 0}\n"
    )


def _everything_written(folder: Path) -> bytes:
    chunks = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            chunks.append(path.read_bytes())
            if zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as archive:
                    chunks.extend(archive.read(name) for name in archive.namelist())
    return b"\n".join(chunks)


def _score_in_a_host_with_credentials(work: Path) -> subprocess.CompletedProcess[str]:
    """Ingest and score ``work/predictions.json`` for ``work/bundle`` in a process started with credentials
    in its environment, so that its /proc/<pid>/environ holds them, as a function's does."""
    pythonpath = os.pathsep.join([str(ROOT / "layers"), str(ROOT)])
    host_env = {"PATH": os.environ["PATH"], "PYTHONPATH": pythonpath, "HOME": str(work), **SECRETS}
    return subprocess.run(
        [sys.executable, "-c", HOST, str(work)], env=host_env, capture_output=True, text=True, check=False
    )


@AS_ROOT
def test_a_program_reading_every_environ_finds_no_credential_of_the_host(tmp_path: Path) -> None:
    # Given a scoring program that dumps its environment and every /proc/*/environ into its outputs
    _stealer_bundle(tmp_path / "bundle")
    (tmp_path / "predictions.json").write_text('{"predictions": [{"id": "q1", "prediction_text": "2"}]}')

    # When the run is scored by a process holding credentials
    host = _score_in_a_host_with_credentials(tmp_path)

    # Then the program ran and read at least its own environment, the host process was non-dumpable,
    # and no credential value is anywhere in what the run produced
    assert host.returncode == 0, host.stderr
    produced = _everything_written(tmp_path / "out")
    assert b'"self"' in produced
    for name, value in SECRETS.items():
        assert value.encode() not in produced, f"{name} leaked into the run's files"
    assert json.loads(host.stdout)["dumpable"] == 0


STEALING_TEST = """\
import os
found = []
for pid in os.listdir("/proc"):
    try:
        found.append(open("/proc/" + pid + "/environ", "rb").read().decode(errors="replace"))
    except OSError:
        pass
print(found)
raise SystemExit(1)
"""


@AS_ROOT
def test_a_patched_test_reading_every_environ_finds_no_credential_of_the_host(tmp_path: Path) -> None:
    # Given a code case, and a submitted diff that adds a test printing every environ it can read
    bundle = tmp_path / "bundle"
    (bundle / "reference").mkdir(parents=True)
    case = {"id": "c1", "question": "fix", "files": {"calc.py": "x = 1\n"}, "test_command": "python t.py"}
    (bundle / "reference" / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (bundle / "competition.yaml").write_text(
        "version: 2\ntitle: Code\ntemplate: code\ntasks:\n  - index: 0\n    reference_data: reference\n"
        "phases:\n  - index: 0\n    tasks: [0]\n    execution_time_limit: 60\nleaderboards:\n  - columns:\n"
        "      - {title: Resolved, key: resolved_rate, index: 0}\n"
    )
    lines = STEALING_TEST.splitlines()
    diff = f"--- /dev/null\n+++ b/t.py\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(
        f"+{line}\n" for line in lines
    )
    predictions = {"predictions": [{"id": "c1", "prediction_text": diff}]}
    (tmp_path / "predictions.json").write_text(json.dumps(predictions))

    # When the run is scored by a process holding credentials
    host = _score_in_a_host_with_credentials(tmp_path)

    # Then the test ran and its output reached the verdicts, but no credential value did
    assert host.returncode == 0, host.stderr
    produced = _everything_written(tmp_path / "out")
    assert b"tests failed (exit 1)" in produced
    assert b"PYTHONUNBUFFERED=1" in produced
    for name, value in SECRETS.items():
        assert value.encode() not in produced, f"{name} leaked into the run's files"


def test_the_program_environment_holds_no_host_variable(
    tmp_path: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    program = write_program(tmp_path, "import json, os\nprint(json.dumps(sorted(os.environ)))\n")

    result = run_in_layout(program, layout)

    assert json.loads(result.stdout) == PROGRAM_VARIABLES


def test_the_program_runs_on_its_runtime_and_sees_nothing_of_benchgens_environment(
    tmp_path: Path, layout: Layout
) -> None:
    # Given a program that says which Python runs it, where its yaml comes from, and whether BenchGen's
    # own library (installed in the environment the tests run in) is importable
    script = """
    import importlib.util, sys, yaml
    print(sys.prefix)
    print(yaml.__file__)
    print(importlib.util.find_spec("benchgen"), importlib.util.find_spec("pytest"))
    """
    program = write_program(tmp_path, script)

    # When it runs in the sandbox (the minimal runtime)
    result = run_in_layout(program, layout)

    # Then the runtime's environment runs it and provides its packages, and BenchGen's is out of its reach
    assert result.returncode == 0, result.stderr
    prefix, yaml_file, found = result.stdout.splitlines()
    runtime = runtime_environment("minimal")
    assert Path(prefix) == runtime.prefix
    assert Path(yaml_file).is_relative_to(runtime.prefix)
    assert found == "None None"
    assert not Path(prefix).samefile(sys.prefix)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A world-writable folder outside /tmp, as a machine may have (its mode alone would let anyone in)."""
    folder = ROOT / f".open-{os.getpid()}-{time.monotonic_ns()}"
    folder.mkdir()
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@AS_ROOT
def test_writes_outside_the_output_folder_do_not_survive(
    tmp_path: Path, layout: Layout, open_folder: Path
) -> None:
    # Given reference data, and a program that writes everywhere it can think of
    (layout.ref / "cases.jsonl").write_text("reference\n")
    token = f"hostile-{os.getpid()}-{time.monotonic_ns()}"
    script = f"""
    import os, pathlib, sys
    targets = {{
        "tmp": "/tmp/{token}",
        "var_tmp": "/var/tmp/{token}",
        "dev_shm": "/dev/shm/{token}",
        "program": os.path.join(os.getcwd(), "main.py"),
        "ref": os.path.join(sys.argv[1], "ref", "cases.jsonl"),
        "ref_new": os.path.join(sys.argv[1], "ref", "extra.jsonl"),
        "res": os.path.join(sys.argv[1], "res", "{token}"),
        "workspace": "{tmp_path}/{token}",
        "run_lock": "/run/lock/{token}",
        "open_folder": "{open_folder}/{token}",
        "output": os.path.join(sys.argv[2], "kept.txt"),
    }}
    for name, path in targets.items():
        try:
            with open(path, "w") as target:
                target.write("{token}")
            print(name, "written")
        except OSError as error:
            print(name, "refused:", error.strerror)
    """
    program = write_program(tmp_path, script)
    before = (program / "main.py").read_text()

    # When it runs
    result = run_in_layout(program, layout)

    # Then what it may write came back; it wrote its input folder and its own, as Codabench mounts them
    # read-write, but in a copy: the program, the reference data and the predictions are as they were; no
    # other write is left
    assert result.ok, result.stderr
    said = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert (said["output"], said["program"]) == ("written", "written")
    assert (said["ref"], said["ref_new"], said["res"]) == ("written", "written", "written")
    assert (layout.output / "kept.txt").read_text() == token
    assert (layout.ref / "cases.jsonl").read_text() == "reference\n"
    assert sorted(p.name for p in layout.ref.iterdir()) == ["cases.jsonl"]
    assert (program / "main.py").read_text() == before
    for leftover in (Path("/tmp", token), Path("/var/tmp", token), Path("/dev/shm", token)):
        assert not leftover.exists(), leftover
    assert not (tmp_path / token).exists()
    assert not Path("/run/lock", token).exists()
    assert said["open_folder"].startswith("refused")
    assert not list(open_folder.iterdir())
    assert not list(layout.res.iterdir())


@AS_ROOT
def test_an_interpreter_installed_under_tmp_stays_reachable_for_the_program(
    tmp_path: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the runtime's environment under /tmp, as in a checkout there with its runtimes
    runtimes = tmp_path / "runtimes"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(runtimes / "minimal")], check=True)
    monkeypatch.setenv("BENCHGEN_RUNTIMES", str(runtimes))
    config = (runtimes / "minimal" / "pyvenv.cfg").read_text().splitlines()[0]
    script = f"""
    import sys
    from pathlib import Path
    print(sys.prefix)
    print(Path({str(runtimes / "minimal" / "pyvenv.cfg")!r}).read_text().splitlines()[0])
    """

    # When a scoring program runs in the root of its own that gives it /app, where /tmp is a fresh one
    job = program_job(
        write_program(tmp_path, script),
        input_dir=layout.input,
        output_dir=layout.output,
        shared_dir=layout.shared,
        ref_dir=layout.ref,
        res_dir=layout.res,
        time_limit=30,
        app=SCORING_APP,
    )
    result = local.LocalSandbox().run(job)

    # Then the runtime's folder is there, read-only, as on the machine, and its python runs the program
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [str(runtimes / "minimal"), config]


@AS_ROOT
def test_services_on_this_machine_are_out_of_reach(tmp_path: Path, layout: Layout) -> None:
    # Given a service listening on the loopback, as the local cloud's endpoint does
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        script = f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
            print("connected")
        except OSError as error:
            print("refused:", error)
        """

        # When a program connects to it
        result = run_in_layout(write_program(tmp_path, script), layout)

    # Then it cannot
    assert result.stdout.startswith("refused:"), result.stdout


def test_links_in_the_output_are_not_followed(tmp_path: Path, layout: Layout) -> None:
    # Given a host file the program may not read, and a program that links its scores to it
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret")
    secret.chmod(0o600)
    script = f"""
    import os, sys
    os.symlink({str(secret)!r}, os.path.join(sys.argv[2], "scores.json"))
    os.symlink("/proc/1/environ", os.path.join(sys.argv[2], "environ.txt"))
    """

    # When it runs
    result = run_in_layout(write_program(tmp_path, script), layout)

    # Then nothing of either target is copied back
    assert result.ok, result.stderr
    assert sorted(os.listdir(layout.output)) == []


def test_a_daemon_in_a_new_session_is_killed_when_the_program_ends(tmp_path: Path, layout: Layout) -> None:
    # Given a program that double-forks a sleeper into a new session, then exits at once
    script = """
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(os.path.join(sys.argv[2], "daemon.pid"), "w") as note:
                note.write(str(os.getpid()))
            time.sleep(300)
        os._exit(0)
    time.sleep(0.5)
    """

    # When it runs
    result = run_in_layout(write_program(tmp_path, script), layout)

    # Then the sleeper is gone, and the run says a process was left behind and stopped
    pid = int((layout.output / "daemon.pid").read_text())
    assert result.ok
    assert result.stray_processes == 1
    assert "the program left 1 process(es) running when it ended; they were stopped" in result.stderr
    assert not _alive(pid)


def test_a_program_that_kills_its_runner_fails_with_that_reason(
    tmp_path: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the runner as Lambda has it: not root, so the program shares its uid and can signal it
    monkeypatch.setattr("benchgen.sandbox.local.os.geteuid", lambda: 1000)
    script = "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(5)\n"

    # When the program kills the runner
    result = run_in_layout(write_program(tmp_path, script), layout)

    # Then the program failed, saying why, and the platform did not
    assert not result.ok
    assert result.stderr.startswith("the program stopped its runner (signal 9)")


def test_a_program_running_forever_with_escaped_children_is_stopped_at_the_limit(
    tmp_path: Path, layout: Layout
) -> None:
    script = """
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        with open(os.path.join(sys.argv[2], "child.pid"), "w") as note:
            note.write(str(os.getpid()))
        while True:
            time.sleep(1)
    while True:
        time.sleep(1)
    """
    started = time.monotonic()

    result = run_in_layout(write_program(tmp_path, script), layout, time_limit=1)

    assert result.timed_out
    assert time.monotonic() - started < 10
    assert not _alive(int((layout.output / "child.pid").read_text()))


def test_a_50_mb_line_is_cut_to_its_tail(tmp_path: Path, layout: Layout) -> None:
    script = """
    import sys
    sys.stdout.write("x" * (50 * 1024 * 1024) + "THE END")
    """

    result = run_in_layout(write_program(tmp_path, script), layout, output_cap=1024)

    assert result.ok
    assert result.stdout_bytes == 50 * 1024 * 1024 + 7
    cut = 50 * 1024 * 1024 + 7 - 1024
    assert result.stdout == f"[... first {cut} bytes cut ...]\n" + "x" * 1017 + "THE END"


def test_a_scoring_run_that_prints_50_mb_keeps_the_tail_in_its_log(tmp_path: Path) -> None:
    # Given a scoring program that prints 50 MB on one line before failing
    from benchgen.environment import open_environment
    from benchgen.scoring.engine import score_predictions

    bundle = tmp_path / "bundle"
    _stealer_bundle(bundle)
    (bundle / "scoring_program" / "score.py").write_text(
        "import sys\nsys.stdout.write('y' * (50 * 1024 * 1024))\nsys.exit('gave up')\n"
    )
    env = open_environment(bundle, tmp_path / "env")
    prediction = tmp_path / "prediction_output.zip"
    with zipfile.ZipFile(prediction, "w") as archive:
        archive.writestr("predictions.json", '{"predictions": []}')

    # When the run is scored
    with pytest.raises(ScoringError) as raised:
        score_predictions(env, prediction, tmp_path / "out", workdir=tmp_path / "work")

    # Then the run fails with the program's own reason, and its log keeps only the cut tail
    assert "exited with code 1" in str(raised.value)
    assert "gave up" in str(raised.value)
    log = (tmp_path / "out" / "logs" / "scoring.log").read_text()
    assert f"[... first {50 * 1024 * 1024 - 1024 * 1024} bytes cut ...]" in log
    assert len(log) < 2 * 1024 * 1024


def test_a_scoring_program_that_never_ends_fails_the_run_at_the_time_limit(tmp_path: Path) -> None:
    # Given a one-second limit and a scoring program that leaves a daemon in a new session and never ends
    from benchgen.environment import open_environment
    from benchgen.scoring.engine import score_predictions

    bundle = tmp_path / "bundle"
    _stealer_bundle(bundle)
    competition = bundle / "competition.yaml"
    competition.write_text(
        competition.read_text().replace("execution_time_limit: 60", "execution_time_limit: 1")
    )
    (bundle / "scoring_program" / "score.py").write_text(
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    open(os.path.join(sys.argv[2], 'daemon.pid'), 'w').write(str(os.getpid()))\n"
        "while True:\n"
        "    time.sleep(1)\n"
    )
    env = open_environment(bundle, tmp_path / "env")
    prediction = tmp_path / "prediction_output.zip"
    with zipfile.ZipFile(prediction, "w") as archive:
        archive.writestr("predictions.json", '{"predictions": []}')
    started = time.monotonic()

    # When the run is scored
    with pytest.raises(ScoringError) as raised:
        score_predictions(env, prediction, tmp_path / "out", workdir=tmp_path / "work")

    # Then the run fails saying so, soon after the limit, and nothing of the program still runs
    assert str(raised.value) == "the scoring program passed the time limit of 1 s and was stopped"
    assert time.monotonic() - started < 15
    with zipfile.ZipFile(tmp_path / "out" / "scoring_output.zip") as output:
        assert not _alive(int(output.read("daemon.pid")))
