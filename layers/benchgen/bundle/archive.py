"""Opening a bundle (a zip or a folder) without trusting what is inside it.

A bundle comes from whoever uploaded it, so every zip entry is checked before a byte lands on disk:
nothing may escape the destination folder, symlinks are refused, and the expanded size and the number of
files are bounded both by what the headers declare and by what is actually written (a header can lie).
Archives made on macOS carry ``__MACOSX/`` and ``.DS_Store`` entries, and many people zip the folder that
holds ``competition.yaml`` rather than its contents: in a bundle zip both are tolerated. A program or data
zip inside the bundle is unpacked as it is, every entry where the zip puts it, as Codabench's worker
unpacks it (``ZipFile.extractall`` into the program's or the data's folder): a zipped folder stays a
folder, so a program that runs on Codabench finds its files at the same places here.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from benchgen.errors import BundleError

COMPETITION_FILES = ("competition.yaml", "competition.yml")
DEFAULT_MAX_BYTES = 2 * 1024**3
DEFAULT_MAX_FILES = 100_000
_CHUNK = 1024 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")
_JUNK_NAMES = frozenset({".DS_Store", "Thumbs.db"})
_JUNK_DIRS = frozenset({"__MACOSX"})


@dataclass(frozen=True)
class Limits:
    """How much one bundle may expand to, counting every archive inside it."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_files: int = DEFAULT_MAX_FILES


class Budget:
    """What is left of the limits; shared by the bundle zip and the zips inside it."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.bytes_used = 0
        self.files_used = 0


def is_junk(name: str) -> bool:
    """True for the archive clutter that macOS and Windows add (never part of a bundle).

    ``._name`` files are macOS AppleDouble resource forks, written beside the real file.
    """
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if any(p in _JUNK_DIRS for p in parts):
        return True
    return bool(parts) and (parts[-1] in _JUNK_NAMES or parts[-1].startswith("._"))


def _human(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"


def path_problem(name: str) -> str | None:
    """Why the bundle path ``name`` would land outside its folder, or None when it stays inside."""
    posix = name.replace("\\", "/")
    if posix.startswith("/"):
        return "is an absolute path"
    if _DRIVE.match(posix):
        return "starts with a drive letter"
    if ".." in PurePosixPath(posix).parts:
        return "climbs out with '..'"
    return None


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _check_entries(infos: list[zipfile.ZipInfo], label: str, budget: Budget) -> None:
    """Refuse the whole archive before extracting anything when its directory already says it is bad."""
    limits = budget.limits
    if budget.files_used + len(infos) > limits.max_files:
        raise BundleError(
            label,
            f"holds {len(infos)} entries, more than the limit of {limits.max_files} files per bundle; "
            "remove files the benchmark does not need",
        )
    seen: set[str] = set()
    declared = 0
    for info in infos:
        problem = path_problem(info.filename)
        if problem:
            raise BundleError(
                label,
                f"entry '{info.filename}' {problem} and would land outside the folder it is unpacked into; "
                "rebuild the zip with paths inside it",
            )
        if _is_symlink(info):
            raise BundleError(
                label, f"entry '{info.filename}' is a symbolic link; replace it with the file it points to"
            )
        key = info.filename.replace("\\", "/").rstrip("/")
        if key in seen and not info.is_dir():
            raise BundleError(label, f"entry '{info.filename}' appears twice; keep one copy")
        seen.add(key)
        declared += info.file_size
    if budget.bytes_used + declared > limits.max_bytes:
        raise BundleError(
            label,
            f"would expand to {_human(declared)}, more than the limit of {_human(limits.max_bytes)}; "
            "make the bundle smaller",
        )


def _copy_bounded(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, label: str, budget: Budget
) -> None:
    written = 0
    with archive.open(info) as src, target.open("xb") as dst:
        while chunk := src.read(_CHUNK):
            written += len(chunk)
            budget.bytes_used += len(chunk)
            if written > info.file_size:
                raise BundleError(
                    label,
                    f"entry '{info.filename}' holds more data than its header declares; "
                    "the archive is damaged or crafted, rebuild it",
                )
            if budget.bytes_used > budget.limits.max_bytes:
                raise BundleError(
                    label,
                    f"expands past the limit of {_human(budget.limits.max_bytes)}; make the bundle smaller",
                )
            dst.write(chunk)


def _extract_all(archive: zipfile.ZipFile, dest: Path, label: str, budget: Budget, as_is: bool) -> None:
    infos = archive.infolist()
    _check_entries(infos, label, budget)
    root = dest.resolve()
    for info in infos:
        if is_junk(info.filename) and not as_is:
            continue
        target = root.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
        # The name checks above already forbid escaping; this guards against anything they missed.
        if not target.resolve().is_relative_to(root):
            raise BundleError(
                label, f"entry '{info.filename}' would land outside the folder it is unpacked into"
            )
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        budget.files_used += 1
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_bounded(archive, info, target, label, budget)
        # Programs may be started as `./run.sh`; keep the executable bit, never setuid or world-write.
        if (info.external_attr >> 16) & 0o111:
            target.chmod(0o755)


def extract_zip(archive: Path, dest: Path, *, label: str, budget: Budget, as_is: bool = False) -> None:
    """Extract ``archive`` into the empty folder ``dest``; on any refusal ``dest`` is left empty.

    ``label`` is how the archive is named in error messages (e.g. ``bundle.zip`` or ``scoring.zip``).
    Archive clutter (:func:`is_junk`) is left out, unless ``as_is``.
    """
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty; extract into a fresh folder")
    if not zipfile.is_zipfile(archive):
        raise BundleError(label, "is not a zip archive (or it is damaged); give a .zip file or a folder")
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(archive) as zf:
            _extract_all(zf, dest, label, budget, as_is)
    except BundleError:
        _empty(dest)
        raise
    except RuntimeError as exc:
        _empty(dest)
        if "encrypted" in str(exc):
            raise BundleError(label, "is password-protected; upload it without a password") from exc
        raise BundleError(label, f"cannot be read ({exc}); rebuild the zip") from exc
    except NotImplementedError as exc:
        _empty(dest)
        raise BundleError(
            label, f"uses a compression method that cannot be read ({exc}); use deflate"
        ) from exc
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        _empty(dest)
        raise BundleError(label, f"is damaged and cannot be extracted ({exc}); rebuild the zip") from exc


def _empty(folder: Path) -> None:
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _visible(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if not is_junk(p.name)]


def single_top_folder(folder: Path) -> Path:
    """``folder`` itself, or the one folder inside it when that is all it holds (ignoring junk)."""
    entries = _visible(folder)
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return folder


def competition_file(folder: Path) -> Path | None:
    """The ``competition.yaml`` (or ``.yml``) directly inside ``folder``, if any."""
    for name in COMPETITION_FILES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def _deeper_hint(folder: Path, depth: int = 3) -> str:
    base = len(folder.parts)
    for current, dirs, files in os.walk(folder):
        level = len(Path(current).parts) - base
        dirs[:] = sorted(d for d in dirs if d not in _JUNK_DIRS) if level < depth else []
        if any(name in files for name in COMPETITION_FILES):
            where = Path(current).relative_to(folder).as_posix()
            return f" (there is one in '{where}/': zip the contents of that folder instead)"
    return ""


def find_root(folder: Path, label: str) -> Path:
    """The folder that holds ``competition.yaml``: ``folder`` or its single top folder."""
    if competition_file(folder):
        return folder
    inner = single_top_folder(folder)
    if inner != folder and competition_file(inner):
        return inner
    raise BundleError(
        label,
        "has no competition.yaml at its top level" + _deeper_hint(folder) + "; "
        "put competition.yaml at the root of the bundle",
    )


def open_bundle(source: Path, workdir: Path, *, budget: Budget | None = None) -> Path:
    """The folder holding ``competition.yaml`` for a bundle given as a zip, a folder or the yaml itself.

    A zip is extracted into a fresh folder under ``workdir``; a folder is used where it is.
    """
    budget = budget or Budget()
    source = source.absolute()
    label = source.name or str(source)
    if not source.exists():
        raise BundleError(str(source), "does not exist; give the path of a bundle zip or folder")
    if source.is_dir():
        return find_root(source, label)
    if source.name in COMPETITION_FILES:
        return source.parent
    workdir.mkdir(parents=True, exist_ok=True)
    dest = Path(tempfile.mkdtemp(prefix="bundle-", dir=workdir))
    extract_zip(source, dest, label=label, budget=budget)
    return find_root(dest, label)


def expand_part(path: Path, workdir: Path, *, label: str, budget: Budget) -> Path:
    """A program or data folder named by competition.yaml: a folder as is, a zip extracted safely and as
    it is (a zipped folder stays a folder, clutter included), as Codabench's worker extracts it."""
    if path.is_dir():
        return path
    workdir.mkdir(parents=True, exist_ok=True)
    dest = Path(tempfile.mkdtemp(prefix="part-", dir=workdir))
    extract_zip(path, dest, label=label, budget=budget, as_is=True)
    return dest
