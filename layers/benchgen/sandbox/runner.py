"""The runner: the only process that starts an untrusted program, and the one that ends its whole tree.

It is executed (never forked from a process holding secrets) with an empty environment as
``python -I -S runner.py``, reads one request as JSON on stdin and answers one result as JSON on stdout.
It imports nothing but the standard library, so it runs the same from the Lambda layer and from a
checkout.

- It makes itself non-dumpable and a child subreaper: every process the program starts, even one that
  leaves its session and double-forks, stays below the runner, so a walk of ``/proc`` finds it; when the
  program exits or passes its time limit, every descendant is killed.
- stdout and stderr are read through pipes and only their last ``output_cap`` bytes are kept, so a
  program that prints without end costs neither memory nor disk.
- When it runs as root (a laptop, CI), the program runs under its own unprivileged uid and gid with no
  capabilities and no new privileges, without network, in a private mount namespace where the root file
  system is read-only, /tmp, /var/tmp, /dev/shm and /run/lock are empty tmpfs that vanish with it, and
  the staged folders are at ``mount_point``; the program's root is a fresh one where ``/app/...`` (the
  folders Codabench programs find there) are the staged folders, without writing ``/app`` on the
  machine. Programs run side by side (an ingestion program beside a scoring program) keep their own
  uids and reach one live shared folder, mounted idmapped for each, so that each reads, writes and
  deletes the other's files there as Codabench's containers, all root, do. On Lambda the
  runner is not root: the function's own sandbox (read-only system folders, its own uid) stands in, and
  the sandbox handler empties /tmp after every program. There ``/app`` is the image's link into /tmp,
  which the runner fills with links to the staged folders.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
# Writable by anyone on a usual Linux system: each gets a fresh, private tmpfs.
SCRATCH_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # noqa: S108 - hidden, not used
# statvfs flags that a bind remount must keep (they share their values with the MS_* mount flags).
_KEPT_FLAGS = 2 | 4 | 8 | 1024 | 2048 | 4096  # nosuid, nodev, noexec, noatime, nodiratime, relatime
MAX_PROCESSES = 256
POLL_S = 0.05
# The mount API's system calls (one number on every architecture Linux added them for at once).
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_MOUNT_SETATTR = 442
AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
OPEN_TREE_CLONE = 1
MOVE_MOUNT_F_EMPTY_PATH = 4
MOUNT_ATTR_NOSUID = 2
MOUNT_ATTR_NODEV = 4
MOUNT_ATTR_IDMAP = 0x00100000


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _prctl(option: int, value: int) -> None:
    _check(_libc().prctl(option, value, 0, 0, 0), f"prctl({option})")


def _bytes(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    result = _libc().mount(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data))
    _check(result, f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _syscall(number: int, *args: Any) -> int:
    """``syscall(number, *args)``; each number goes in a full register, as the kernel reads it."""
    words = [ctypes.c_long(arg) if isinstance(arg, int) else arg for arg in args]
    result: int = _libc().syscall(ctypes.c_long(number), *words)
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"syscall {number}: {os.strerror(error)}")
    return result


def _user_namespace(owner: int, uid: int, gid: int) -> int:
    """A descriptor of a new user namespace whose id ``owner`` is ``uid`` (and ``gid``) outside: the
    idmapping that shows the files of ``owner`` as the program's own. A child makes the namespace and
    waits until this process has written its maps and opened it."""
    ready_read, ready_write = os.pipe()
    done_read, done_write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child only makes the namespace and waits
        os.close(ready_read)
        os.close(done_write)
        made = _libc().unshare(CLONE_NEWUSER) == 0
        os.write(ready_write, b"1" if made else b"0")
        os.read(done_read, 1)
        os._exit(0)
    os.close(ready_write)
    os.close(done_read)
    try:
        if os.read(ready_read, 1) != b"1":
            raise OSError(0, "unshare(CLONE_NEWUSER) failed")
        for name, outside in (("uid_map", uid), ("gid_map", gid)):
            with open(f"/proc/{child}/{name}", "w", encoding="ascii") as mapping:
                mapping.write(f"{owner} {outside} 1\n")
        return os.open(f"/proc/{child}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(ready_read)
        os.close(done_write)
        os.waitpid(child, 0)


def _bind_as_own(source_fd: int, target: str, owner: int, uid: int, gid: int) -> None:
    """Bind the folder of ``source_fd`` at ``target`` as an idmapped mount: every file there that
    ``owner`` owns on disk is the program's own to it, and what it creates is stored as ``owner``'s. Two
    programs, each under its own uid, then each read, write, change and delete the other's files there as
    if they both were root, and neither gains anything over the other's processes."""
    userns = _user_namespace(owner, uid, gid)
    try:
        flags = AT_EMPTY_PATH | OPEN_TREE_CLONE | os.O_CLOEXEC
        tree = _syscall(SYS_OPEN_TREE, source_fd, b"", flags)
        try:
            attr = _MountAttr(MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, userns)
            _syscall(SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr))
            _syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH)
        finally:
            os.close(tree)
    finally:
        os.close(userns)


def _bound_as_own(source_fd: int, target: str, owner: int, uid: int, gid: int) -> bool:
    """:func:`_bind_as_own`, or False where the kernel or the file system has no idmapped mounts."""
    try:
        _bind_as_own(source_fd, target, owner, uid, gid)
    except OSError:
        return False
    return True


def _hidden_ancestor(path: Path) -> Path | None:
    """The outermost folder above ``path`` that others may not enter (e.g. root's home), if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def _isolate_mounts(
    root: str,
    mount_point: str,
    expose: list[str],
    binds: dict[str, str],
    owner: int | None,
    ids: tuple[int, int],
) -> None:
    """A private mount namespace: fresh scratch folders, the staged root at ``mount_point``, the
    interpreter's folders (``expose``) reachable read-only even when they live in a private home, and each
    folder of ``binds`` (place under the root -> folder of the machine) live, for programs that run side
    by side and share it. Where the kernel can, a folder of ``binds`` is idmapped so that ``owner``'s
    files are the program's (``ids``: its uid and gid) own; elsewhere it is bound as it is, and the
    program reaches its files through the group ``owner`` (see ``run``)."""
    # A network namespace of its own, with only a loopback that is down: the local cloud's endpoints (which
    # accept any credentials) and the machine's other services are out of reach.
    _check(_libc().unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Opened in the new namespace (a mount of another namespace cannot be bound), before anything covers them.
    keep = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in [root, *expose, *binds.values()]}
    covered = [folder for folder in SCRATCH_FOLDERS if os.path.isdir(folder)]
    # A private folder inside a scratch folder is hidden already: the fresh scratch tmpfs holds nothing.
    covered += [
        str(hidden)
        for path in expose
        if (hidden := _hidden_ancestor(Path(path))) is not None
        and not str(hidden).startswith(tuple(f"{folder}/" for folder in SCRATCH_FOLDERS))
    ]
    for folder in dict.fromkeys(covered):
        mode = "1777" if folder in SCRATCH_FOLDERS else "0755"
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size=1g")
    for path in expose:
        os.makedirs(path, 0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{keep[path]}", path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)
    os.makedirs(mount_point, 0o755, exist_ok=True)
    _mount(f"/proc/self/fd/{keep[root]}", mount_point, None, MS_BIND | MS_REC | MS_NOSUID | MS_NODEV)
    for place, folder in binds.items():
        target = f"{mount_point}/{place}"
        if owner is None or not _bound_as_own(keep[folder], target, owner, *ids):
            _mount(f"/proc/self/fd/{keep[folder]}", target, None, MS_BIND | MS_NOSUID | MS_NODEV)
    for descriptor in keep.values():
        os.close(descriptor)
    # The rest of the root file system is read-only here, world-writable corners included.
    kept = os.statvfs("/").f_flag & _KEPT_FLAGS
    _mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)


APP = "/app"
# Where the root case builds the program's file system: on the private /tmp, never on the machine's disk.
APP_ROOT = "/tmp/.app-root"  # noqa: S108 - inside the namespace's private tmpfs
# Pseudo file systems and scratch space keep their own mounts' flags; every other folder is read-only.
_KEPT_WRITABLE = ("proc", "sys", "dev", "tmp")


def app_links_possible() -> bool:
    """Without root, ``/app`` exists only where the image made it a link into /tmp (the sandbox function's
    container image): the runner then fills its target with links to the staged folders."""
    return os.path.islink(APP) and os.path.realpath(APP).startswith(SCRATCH_FOLDERS[0] + "/")


def _link_app(app: dict[str, str], base: str) -> None:
    """Fill the target of the ``/app`` link with one link per folder (the sandbox handler empties /tmp
    after every program, and only one program runs in a function's instance at a time)."""
    target = os.path.realpath(APP)
    os.makedirs(target, 0o755, exist_ok=True)
    for sub, place in app.items():
        link = os.path.join(target, sub)
        os.makedirs(os.path.dirname(link), 0o755, exist_ok=True)
        os.symlink(f"{base}/{place}", link)


def _enter_app_root(mount_point: str, app: dict[str, str], expose: list[str]) -> None:
    """Make ``/app`` exist for the program without touching the machine: a fresh root on a tmpfs of the
    private /tmp, holding the machine's folders bound (read-only, but for /tmp, /dev, /proc, /sys and the
    scratch mounts inside them), the interpreter's folders (``expose``) again where they live under /tmp,
    and ``/app/<name>`` bound to the staged folders; then chroot into it."""
    os.mkdir(APP_ROOT, 0o755)
    _mount("tmpfs", APP_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for name in os.listdir("/"):
        source, target = f"/{name}", f"{APP_ROOT}/{name}"
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
        elif os.path.isdir(source) and name != APP.strip("/"):
            os.mkdir(target)
            # /tmp holds this new root itself: only its staged folders come along.
            _mount(source, target, None, MS_BIND if name == "tmp" else MS_BIND | MS_REC)
            if name not in _KEPT_WRITABLE:
                kept = os.statvfs(source).f_flag & _KEPT_FLAGS
                _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)
    os.makedirs(f"{APP_ROOT}{mount_point}", 0o755, exist_ok=True)
    _mount(mount_point, f"{APP_ROOT}{mount_point}", None, MS_BIND | MS_REC)
    # /tmp came along without the mounts inside it: an interpreter installed under /tmp (a checkout
    # there, say) is bound in again, read-only, or the program's python would not start.
    for path in expose:
        if path.startswith(SCRATCH_FOLDERS[0] + "/"):
            target = f"{APP_ROOT}{path}"
            os.makedirs(target, 0o755, exist_ok=True)
            _mount(path, target, None, MS_BIND | MS_REC)
            _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)
    for sub, place in app.items():
        target = f"{APP_ROOT}{APP}/{sub}"
        os.makedirs(target, 0o755, exist_ok=True)
        _mount(f"{mount_point}/{place}", target, None, MS_BIND | MS_REC | MS_NOSUID | MS_NODEV)
    _mount(None, APP_ROOT, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chroot(APP_ROOT)
    os.chdir("/")


def _limit_child() -> None:
    """In the program's process, before exec: no way back to privileges, no core dumps."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _limit_own_uid() -> None:
    """As :func:`_limit_child`, and few processes: the count is per uid, and the uid is the program's own."""
    _limit_child()
    resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))


def become_subreaper() -> None:
    """Orphans of any descendant are re-parented to this process, so they stay findable below it."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _descendants() -> dict[int, bool]:
    """Every process below this one (``/proc`` parent links, followed down from our pid), and whether it
    still runs (a zombie has ended and only waits to be reaped)."""
    children: dict[int, list[int]] = {}
    running: dict[int, bool] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:  # it exited meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        running[int(entry)] = fields[0] != b"Z"
    found: dict[int, bool] = {}
    pending = [os.getpid()]
    while pending:
        for child in children.get(pending.pop(), []):
            found[child] = running[child]
            pending.append(child)
    return found


def kill_descendants(main: subprocess.Popen[bytes] | None = None) -> int:
    """Kill every descendant until none is left, and reap them; ``main`` is waited for through Popen.

    Returns how many were still running, ``main`` aside."""
    stray = 0
    for _ in range(1000):  # a fork bomb is bounded by RLIMIT_NPROC: this ends
        alive = _descendants()
        if not alive:
            return stray
        others = [pid for pid, runs in alive.items() if runs and (main is None or pid != main.pid)]
        stray = max(stray, len(others))
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        if main is not None and main.returncode is None:
            main.wait()
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(POLL_S / 5)
                break
    return stray


class Tail:
    """The last ``cap`` bytes of a stream, and how many bytes it carried in all."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.cap:
            del self.data[: len(self.data) - self.cap]

    @property
    def cut(self) -> int:
        return self.total - min(len(self.data), self.cap)

    def text(self) -> str:
        return bytes(self.data[-self.cap :] if self.cap else b"").decode("utf-8", errors="replace")


def _pump(selector: selectors.BaseSelector, timeout: float) -> None:
    for key, _ in selector.select(timeout):
        chunk = os.read(key.fd, 1 << 16)
        if chunk:
            key.data.add(chunk)
        else:
            selector.unregister(key.fd)


def run(request: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    privileged = os.geteuid() == 0 and request.get("uid") is not None
    app = request.get("app", {})
    # Programs side by side share a folder: its files belong to this group, each program is in it, and
    # what it creates there is writable by the group, for when the folder cannot be idmapped.
    shared_group = request.get("shared_group")
    if privileged:
        _isolate_mounts(
            request["root"],
            request["mount_point"],
            request.get("expose", []),
            request.get("binds", {}),
            shared_group,
            (request["uid"], request["gid"]),
        )
        if app:
            _enter_app_root(request["mount_point"], app, request.get("expose", []))
    elif app and app_links_possible():
        _link_app(app, request["root"])
    out, err = Tail(request["output_cap"]), Tail(request["output_cap"])
    try:
        main = subprocess.Popen(  # noqa: S603 - no shell; running the program is the point
            request["argv"],
            cwd=request["cwd"],
            env=request["env"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            user=request["uid"] if privileged else None,
            group=request["gid"] if privileged else None,
            extra_groups=([] if shared_group is None else [shared_group]) if privileged else None,
            umask=0o022 if shared_group is None else 0o002,
            preexec_fn=_limit_own_uid if privileged else _limit_child,  # the runner has a single thread
        )
    except (OSError, subprocess.SubprocessError) as exc:
        message = f"could not start {request['argv'][0]!r}: {getattr(exc, 'strerror', None) or exc}"
        return {"returncode": 127, "stderr": message, "duration_s": time.monotonic() - started}
    assert main.stdout is not None and main.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(main.stdout, selectors.EVENT_READ, out)
    selector.register(main.stderr, selectors.EVENT_READ, err)
    deadline = started + request["time_limit"]
    timed_out = False
    while main.poll() is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        _pump(selector, min(POLL_S, remaining))
    stray = kill_descendants(main)
    # Every writer is dead now: what is left in the pipes ends with end-of-file.
    while selector.get_map():
        _pump(selector, POLL_S)
    return {
        "returncode": main.returncode,
        "timed_out": timed_out,
        "duration_s": time.monotonic() - started,
        "stdout": out.text(),
        "stderr": err.text(),
        "stdout_bytes": out.total,
        "stderr_bytes": err.total,
        "stdout_cut": out.cut,
        "stderr_cut": err.cut,
        # processes the program left running besides its own (a double fork into a new session, ...)
        "stray_processes": stray,
    }


def main() -> None:
    _prctl(PR_SET_DUMPABLE, 0)
    become_subreaper()
    request = json.loads(sys.stdin.buffer.read())
    json.dump(run(request), sys.stdout)


if __name__ == "__main__":
    main()
