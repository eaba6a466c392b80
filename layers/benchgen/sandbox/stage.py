"""Copy a job's folders under one fresh root for the program, and copy back only what it may return.

The program never works in the caller's folders: it gets copies, so whatever it changes in its program
folder or its reference data is thrown away with the root. What comes back is read without following
links: a program that leaves ``output/scores.json -> /proc/1/environ`` gets nothing copied.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from benchgen.sandbox.job import ProgramJob, StagedJob

HOME = "home"  # the program's HOME and TMPDIR, under the root
# The folder on the program's PYTHONPATH, under the root: the startup hook every program's Python runs.
STARTUP = "startup"
STARTUP_HOOK = Path(__file__).with_name("startup") / "sitecustomize.py"
# Where the startup hook notes the names a program asked numpy for in vain (see the hook), under HOME.
REMOVED_NAMES = ".removed-numpy-names"
_CHUNK = 1 << 20


def _placements(folders: dict[str, Path], cwd: str) -> dict[str, str]:
    """Each folder's place under the root; a folder inside another keeps its place inside it."""
    names_of: dict[Path, list[str]] = {}
    for name, path in sorted(folders.items(), key=lambda item: (item[0] != cwd, item[0])):
        names_of.setdefault(path.absolute(), []).append(name)
    placed: dict[Path, str] = {}
    for path in sorted(names_of, key=lambda path: len(path.parts)):
        outer = next((done for done in placed if path.is_relative_to(done)), None)
        placed[path] = f"{placed[outer]}/{path.relative_to(outer).as_posix()}" if outer else names_of[path][0]
    return {name: placed[path.absolute()] for name, path in folders.items()}


def stage(job: ProgramJob, root: Path) -> StagedJob:
    """Copy every folder of ``job`` under the empty ``root``; links are copied as links, not followed."""
    places = _placements(job.folders, job.cwd)
    root.mkdir(parents=True)
    for name, place in sorted(places.items(), key=lambda item: item[1].count("/")):
        target = root / place
        if target.exists():
            continue
        source = job.folders[name]
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        else:
            target.mkdir(parents=True)
    (root / HOME).mkdir()
    (root / STARTUP).mkdir()
    shutil.copyfile(STARTUP_HOOK, root / STARTUP / STARTUP_HOOK.name)
    return StagedJob(
        command=job.command,
        runtime=job.runtime,
        cwd=places[job.cwd],
        folders=places,
        writable=sorted({places[name] for name in job.writable if name in places} | {HOME}),
        collect={name: places[name] for name in job.collect},
        time_limit=job.time_limit,
        output_cap=job.output_cap,
        app={sub: places[name] for sub, name in job.app.items() if name in places},
    )


def hand_over(root: Path, staged: StagedJob, uid: int, gid: int) -> None:
    """Give the program's uid its writable folders; everything else stays with the staging user, and is
    made readable (not writable) by others, so the program can read its reference data and nothing more."""
    writable = [root / place for place in staged.writable]
    for folder, dirs, files in os.walk(root):
        for path in [Path(folder)] + [Path(folder, name) for name in dirs + files]:
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                continue
            if any(path == place or path.is_relative_to(place) for place in writable):
                os.chown(path, uid, gid)
            elif stat.S_ISDIR(mode) or mode & stat.S_IXUSR:
                os.chmod(path, 0o755)  # noqa: S103 - readable reference data is the point
            else:
                os.chmod(path, 0o644)


def copy_back(source: Path, target: Path) -> None:
    """Copy the regular files and folders under ``source`` into ``target``; links and devices are skipped."""
    target.mkdir(parents=True, exist_ok=True)
    for folder, dirs, files in os.walk(source):  # never follows links to folders
        relative = Path(folder).relative_to(source)
        for name in dirs:
            if stat.S_ISDIR(os.lstat(os.path.join(folder, name)).st_mode):
                (target / relative / name).mkdir(exist_ok=True)
        for name in files:
            _copy_regular(Path(folder, name), target / relative / name)


def _copy_regular(source: Path, target: Path) -> None:
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # a link (ELOOP), or gone
        return
    with os.fdopen(descriptor, "rb") as reader:
        if not stat.S_ISREG(os.fstat(reader.fileno()).st_mode):
            return
        with target.open("wb") as writer:
            shutil.copyfileobj(reader, writer, _CHUNK)
