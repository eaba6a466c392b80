"""Run a program on this machine, through the runner, in a copy of its folders.

The process that calls this holds credentials (the function's role, the operator's keys). It makes
itself non-dumpable first, so a program running under the same uid (on Lambda) cannot read its
``/proc/<pid>/environ`` or memory. It then executes the runner with an empty environment; the runner
never held a secret. As root (a laptop, CI), the program also gets a uid of its own for the run: root can
read every process's environ whatever its dumpable flag, so the program must not keep root's powers.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import stat
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from pathlib import Path

from benchgen.sandbox.job import ProgramJob, ProgramResult, StagedJob, build_argv, uses_app
from benchgen.sandbox.runner import app_links_possible
from benchgen.sandbox.runtimes import RuntimeEnvironment, runtime_environment
from benchgen.sandbox.stage import HOME, REMOVED_NAMES, STARTUP, copy_back, hand_over, stage
from benchgen.sandbox.startup.sitecustomize import REMOVED

RUNNER = Path(__file__).with_name("runner.py")
# Where the program sees its root inside the runner's private mount namespace (a fresh tmpfs /tmp).
MOUNT_POINT = Path("/tmp/sandbox")  # noqa: S108 - inside a private tmpfs, not the machine's /tmp
# Each run gets its own uid and gid from this range, so two programs cannot signal or read each other.
RUN_IDS = range(200_000, 300_000)
RUNNER_GRACE_S = 60
PR_SET_DUMPABLE = 4
# Without root the runner cannot give a program its own root file system, and ``/app`` is never written
# on the machine itself: only the sandbox image, where /app links into /tmp, has it without root.
APP_REFUSED = (
    "the command names a path under /app, Codabench's container folders, which this sandbox cannot give "
    "a program (it runs without root, so without a file system of its own); write the command with "
    "$program, $input, $output, $shared, $submission_program ... instead"
)
_SEARCH_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
# A few of the startup hook's lines are all a run needs.
_MAX_NOTES = 100
_MAX_VERSION = 40


class RunnerError(RuntimeError):
    """The runner itself failed (not the program): a platform fault, reported as such."""


def seal_process() -> None:
    """Make this process non-dumpable: no other process of its uid can read its environ or memory."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise RunnerError(f"prctl(PR_SET_DUMPABLE) failed: {os.strerror(ctypes.get_errno())}")


def program_env(base: Path, runtime: RuntimeEnvironment) -> dict[str, str]:
    """A fresh environment: nothing is inherited from the host, so no secret can leak into it. ``python``
    on its PATH is the runtime's, which finds the runtime's packages itself; PYTHONPATH holds only the
    startup hook, which notes where the program asks numpy for a name numpy removed."""
    home = base / HOME
    search = [str(runtime.bin), *_SEARCH_PATH]
    return {
        "PYTHONPATH": str(base / STARTUP),
        "BENCHGEN_REMOVED_NAMES": str(home / REMOVED_NAMES),
        "PATH": os.pathsep.join(search),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _tail(text: str, cut: int) -> str:
    return f"[... first {cut} bytes cut ...]\n{text}" if cut > 0 else text


def run_staged(
    staged: StagedJob,
    root: Path,
    *,
    binds: dict[str, str] | None = None,
    run_id: int | None = None,
    shared_group: int | None = None,
    runtimes: Path | None = None,
) -> ProgramResult:
    """Run a staged job through the runner, in its runtime's environment under ``runtimes`` (the settings'
    folder when None); never raises for what the program does.

    ``binds`` (place under the root -> folder of this machine) are reached live instead of copied: only in
    the runner's private mount namespace, so only as root. The job's ``/app`` folders are given as root,
    or where ``/app`` links into /tmp (the sandbox image); elsewhere a command naming them is refused.
    As root the program runs under ``run_id`` (a fresh one when None); ``shared_group`` owns the files of
    ``binds``, shared with programs running beside it."""
    seal_process()
    runtime = runtime_environment(staged.runtime, runtimes)
    isolated = os.geteuid() == 0
    if not (isolated or app_links_possible()) and uses_app(staged.command):
        return ProgramResult(
            returncode=126,
            stdout="",
            stderr=f"{APP_REFUSED}: {staged.command}",
            timed_out=False,
            duration_s=0.0,
            command=staged.command.split(),
        )
    if not isolated:
        run_id = None
    elif run_id is None:
        run_id = RUN_IDS.start + secrets.randbelow(len(RUN_IDS))
    base = MOUNT_POINT if isolated else root.absolute()
    if run_id is not None:
        hand_over(root, staged, run_id, run_id)
    argv = build_argv(
        staged.command, {name: base / place for name, place in staged.folders.items()}, runtime.interpreter
    )
    request = {
        "argv": argv,
        "cwd": str(base / staged.cwd),
        "env": program_env(base, runtime),
        "time_limit": staged.time_limit,
        "output_cap": staged.output_cap,
        "uid": run_id,
        "gid": run_id,
        "root": str(root.absolute()),
        "mount_point": str(MOUNT_POINT),
        "expose": runtime.folders(),
        "binds": binds or {},
        "shared_group": shared_group,
        "app": staged.app,
    }
    try:
        completed = subprocess.run(  # noqa: S603 - our own runner, by absolute path
            [sys.executable, "-I", "-S", str(RUNNER)],
            input=json.dumps(request).encode(),
            capture_output=True,
            env={},
            timeout=staged.time_limit + RUNNER_GRACE_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RunnerError(f"the program runner did not answer in time: {exc}") from exc
    if completed.returncode < 0 and not isolated:
        # Without a uid of its own (Lambda) the program can signal its runner; that is its failure.
        return ProgramResult(
            returncode=completed.returncode,
            stdout="",
            stderr=f"the program stopped its runner (signal {-completed.returncode}); a program may not "
            "signal the process that runs it",
            timed_out=False,
            duration_s=0.0,
            command=argv,
        )
    if completed.returncode != 0:
        raise RunnerError(f"the program runner failed: {completed.stderr.decode(errors='replace')[-2000:]}")
    answer = json.loads(completed.stdout)
    stdout, stderr = answer.get("stdout", ""), answer.get("stderr", "")
    stray = answer.get("stray_processes", 0)
    if stray:
        stderr += (
            f"\n[sandbox] the program left {stray} process(es) running when it ended; they were stopped\n"
        )
    names, numpy_version = _removed_names(root / HOME / REMOVED_NAMES)
    return ProgramResult(
        returncode=answer["returncode"],
        removed_names=names,
        numpy_version=numpy_version,
        stdout=_tail(stdout, answer.get("stdout_cut", 0)),
        stderr=_tail(stderr, answer.get("stderr_cut", 0)),
        timed_out=answer.get("timed_out", False),
        duration_s=round(answer["duration_s"], 3),
        command=argv,
        stdout_bytes=answer.get("stdout_bytes", len(stdout)),
        stderr_bytes=answer.get("stderr_bytes", len(stderr)),
        stray_processes=stray,
    )


def _removed_names(notes: Path) -> tuple[tuple[str, ...], str | None]:
    """The names the startup hook noted (each once, in order) and the numpy version it saw; the program
    could write the file itself, so only its first lines of the expected shape are read."""
    try:
        with notes.open(encoding="utf-8", errors="replace") as lines:
            words = [line.split() for line in islice(lines, _MAX_NOTES)]
    except OSError:
        return (), None
    kept = [pair for pair in words if len(pair) == 2 and pair[0] in REMOVED]
    names = tuple(dict.fromkeys(f"np.{name}" for name, _ in kept))
    return names, (kept[0][1][:_MAX_VERSION] if kept else None)


def share_folder(folder: Path, owner: int) -> None:
    """Give ``folder`` and what it holds to ``owner`` (uid and gid), group-writable, the folders setgid
    and without the sticky bit: programs beside each other then read, write and delete each other's
    files in it, as Codabench's containers (all root) do in theirs."""
    for place, dirs, files in os.walk(folder):
        for path in [Path(place)] + [Path(place, name) for name in dirs + files]:
            mode = os.lstat(path).st_mode
            os.chown(path, owner, owner, follow_symlinks=False)
            if stat.S_ISDIR(mode):
                os.chmod(path, 0o2770)  # noqa: S103 - the group is the programs' pair
            elif stat.S_ISREG(mode):
                os.chmod(path, stat.S_IMODE(mode) | 0o660)


class LocalSandbox:
    """Runs each job in a fresh copy of its folders on this machine, then copies back what it may return."""

    def __init__(self, scratch: Path | None = None) -> None:
        self.scratch = scratch

    @property
    def runs_side_by_side(self) -> bool:
        """Whether :meth:`run_side_by_side` can keep programs apart: it needs a uid and a mount namespace
        for each, so root."""
        return os.geteuid() == 0

    def run_side_by_side(self, jobs: Sequence[ProgramJob], *, shared: str) -> list[ProgramResult]:
        """Run ``jobs`` at the same time, each in its own copy of its folders, under its own uid and in its
        own namespaces, all reaching the one folder of their ``shared`` placeholder live (and nothing else
        of each other's): a program sees no folder of another job, its reference data included."""
        if not self.runs_side_by_side:
            raise RunnerError("programs run side by side only as root, each under a uid of its own")
        live = jobs[0].folders[shared].absolute()
        if any(job.folders[shared].absolute() != live for job in jobs):
            raise ValueError(f"the jobs must name one and the same {shared} folder")
        # A uid for each program, never the same (one uid could read the other's /proc/<pid>/root, its
        # reference data), and one more that owns the shared folder for them all.
        *run_ids, group = secrets.SystemRandom().sample(RUN_IDS, len(jobs) + 1)
        share_folder(live, group)
        with tempfile.TemporaryDirectory(prefix="sandbox-", dir=self.scratch) as scratch:
            roots = [Path(scratch) / f"root-{position}" for position in range(len(jobs))]
            staged = [stage(job, root) for job, root in zip(jobs, roots, strict=True)]
            with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
                running = [
                    pool.submit(
                        run_staged,
                        each,
                        root,
                        binds={each.folders[shared]: str(live)},
                        run_id=run_id,
                        shared_group=group,
                    )
                    for each, root, run_id in zip(staged, roots, run_ids, strict=True)
                ]
                results = [future.result() for future in running]
            for job, each, root in zip(jobs, staged, roots, strict=True):
                for name, place in each.collect.items():
                    copy_back(root / place, job.folders[name])
        return results

    def run(self, job: ProgramJob) -> ProgramResult:
        with tempfile.TemporaryDirectory(prefix="sandbox-", dir=self.scratch) as scratch:
            root = Path(scratch) / "root"
            staged = stage(job, root)
            result = run_staged(staged, root)
            for name, place in staged.collect.items():
                copy_back(root / place, job.folders[name])
        return result
