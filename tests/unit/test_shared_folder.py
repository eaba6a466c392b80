"""Programs side by side share ``shared/`` as Codabench's containers (all root) do: each reads, writes and
deletes what the other made there, whatever mode the file was made with, while each keeps a uid of its
own, so neither reaches the other's processes or folders."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from benchgen.sandbox.job import ProgramJob, ProgramResult
from benchgen.sandbox.local import LocalSandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="programs side by side need the runner as root")

# Makes files the way libraries do: a folder of mode 0755, a file of 0644 (os.open with a mode), a file
# of 0600 (tempfile.mkstemp, then renamed into place); then waits for the other's answer and deletes it.
MAKER = """
    import json, os, sys, tempfile, time
    shared = sys.argv[1]
    os.makedirs(os.path.join(shared, "round"))
    os.chmod(os.path.join(shared, "round"), 0o755)
    handle = os.open(os.path.join(shared, "round", "data"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(handle, b"rows")
    os.close(handle)
    handle, temporary = tempfile.mkstemp(dir=shared)
    os.write(handle, b"private")
    os.close(handle)
    os.replace(temporary, os.path.join(shared, "private"))
    with open(os.path.join(shared, "pid"), "w") as marker:
        marker.write(str(os.getpid()))
    os.rename(os.path.join(shared, "pid"), os.path.join(shared, "go"))
    while not os.path.exists(os.path.join(shared, "answer")):
        time.sleep(0.02)
    with open(os.path.join(shared, "answer")) as answer:
        said = answer.read()
    os.remove(os.path.join(shared, "answer"))
    print(json.dumps({"uid": os.getuid(), "answer": said, "left": sorted(os.listdir(shared))}))
"""

# Reads, appends to and deletes all of it, tries the maker's /proc/<pid>/root, and answers with a file of
# mode 0600.
TAKER = """
    import json, os, shutil, sys, time
    shared = sys.argv[1]
    while not os.path.exists(os.path.join(shared, "go")):
        time.sleep(0.02)
    with open(os.path.join(shared, "go")) as marker:
        pid = marker.read()
    try:
        os.listdir(f"/proc/{pid}/root/")
        other_root = "listed"
    except OSError as error:
        other_root = error.strerror
    with open(os.path.join(shared, "round", "data"), "a") as data:
        data.write("+more")
    with open(os.path.join(shared, "round", "data")) as data:
        rows = data.read()
    with open(os.path.join(shared, "private")) as private:
        secret = private.read()
    shutil.rmtree(os.path.join(shared, "round"))
    os.remove(os.path.join(shared, "private"))
    os.remove(os.path.join(shared, "go"))
    handle = os.open(os.path.join(shared, "answer.tmp"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(handle, f"{rows} {secret}".encode())
    os.close(handle)
    os.rename(os.path.join(shared, "answer.tmp"), os.path.join(shared, "answer"))
    print(json.dumps({"uid": os.getuid(), "other_root": other_root}))
"""


def _job(tmp_path: Path, name: str, script: str) -> ProgramJob:
    program = tmp_path / name
    program.mkdir()
    (program / "main.py").write_text(textwrap.dedent(script))
    return ProgramJob(
        command="python $program/main.py $shared",
        folders={"program": program, "shared": tmp_path / "shared", "output": tmp_path / f"{name}-output"},
        time_limit=30,
    )


def _said(result: ProgramResult) -> dict[str, object]:
    assert result.ok, result.stderr
    said: dict[str, object] = json.loads(result.stdout)
    return said


def test_programs_side_by_side_read_write_and_delete_each_others_files_in_shared(tmp_path: Path) -> None:
    # given a program that makes a 0755 folder, a 0644 file and a 0600 file in shared/, and one that
    # appends to, reads and deletes them all and answers with a 0600 file the first reads and deletes
    (tmp_path / "shared").mkdir()
    jobs = [_job(tmp_path, "maker", MAKER), _job(tmp_path, "taker", TAKER)]

    # when they run side by side
    maker, taker = LocalSandbox().run_side_by_side(jobs, shared="shared")

    # then every step of the exchange worked, and shared/ is empty at the end
    assert _said(maker)["answer"] == "rows+more private"
    assert _said(maker)["left"] == []
    assert list((tmp_path / "shared").iterdir()) == []
    _said(taker)


def test_programs_side_by_side_keep_uids_of_their_own(tmp_path: Path) -> None:
    # given the same two programs
    (tmp_path / "shared").mkdir()
    jobs = [_job(tmp_path, "maker", MAKER), _job(tmp_path, "taker", TAKER)]

    # when they run side by side
    maker, taker = LocalSandbox().run_side_by_side(jobs, shared="shared")

    # then each ran under a uid of its own, neither root, and the taker could not look into the maker's
    # root through /proc (where the scoring program's reference data would be)
    uids = {_said(maker)["uid"], _said(taker)["uid"]}
    assert len(uids) == 2 and 0 not in uids
    assert _said(taker)["other_root"] == "Permission denied"


def test_files_left_in_shared_before_the_programs_run_are_theirs_to_delete(tmp_path: Path) -> None:
    # given a shared/ that already holds a read-only file and a read-only folder made by another user
    shared = tmp_path / "shared"
    (shared / "seed").mkdir(parents=True)
    (shared / "seed" / "rows").write_text("seed")
    (shared / "seed" / "rows").chmod(0o444)
    (shared / "seed").chmod(0o555)
    script = """
        import os, shutil, sys
        shutil.rmtree(os.path.join(sys.argv[1], "seed"))
        print('{"deleted": true}')
    """
    jobs = [_job(tmp_path, "cleaner", script), _job(tmp_path, "idle", "print('{}')")]

    # when a program beside another deletes it
    cleaner, idle = LocalSandbox().run_side_by_side(jobs, shared="shared")

    # then it is gone
    assert _said(cleaner) == {"deleted": True}
    assert _said(idle) == {}
    assert list(shared.iterdir()) == []


def test_programs_naming_app_shared_reach_each_others_private_files_there(tmp_path: Path) -> None:
    # given two programs that only know /app/shared: one leaves a 0600 file (tempfile.mkstemp), the other
    # reads and deletes it
    (tmp_path / "shared").mkdir()
    leaver = """
        import json, os, tempfile, time
        handle, temporary = tempfile.mkstemp(dir="/app/shared")
        os.write(handle, b"private")
        os.close(handle)
        os.replace(temporary, "/app/shared/private")
        while os.path.exists("/app/shared/private"):
            time.sleep(0.02)
        print(json.dumps({"taken": True}))
    """
    taker = """
        import json, os, time
        while not os.path.exists("/app/shared/private"):
            time.sleep(0.02)
        with open("/app/shared/private") as private:
            said = private.read()
        os.remove("/app/shared/private")
        print(json.dumps({"read": said}))
    """
    jobs = [
        _job(tmp_path, name, script).model_copy(
            update={
                "command": "python /app/program/main.py",
                "app": {"program": "program", "shared": "shared"},
            }
        )
        for name, script in (("leaver", leaver), ("taker", taker))
    ]

    # when they run side by side
    left, took = LocalSandbox().run_side_by_side(jobs, shared="shared")

    # then the file went from one to the other through /app/shared
    assert (_said(left), _said(took)) == ({"taken": True}, {"read": "private"})
