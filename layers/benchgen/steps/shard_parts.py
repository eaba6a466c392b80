"""A shard's part folder in the bucket: its files uploaded as they are, then a list of their names.

The list is written last, so a part whose list is there is whole; a reader downloads exactly the listed
files back into a folder of its own.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from benchgen.bucket_layout import part_manifest_key, part_prefix
from benchgen.errors import BenchGenError
from benchgen.ports.storage import MissingObject, ObjectStorage


class MissingPart(BenchGenError):
    """A shard's part is not (wholly) in the bucket: the step that writes it did not finish."""


def upload_part(folder: Path, run_id: str, kind: str, shard: int, *, store: ObjectStorage) -> None:
    names = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    prefix = part_prefix(run_id, kind, shard)
    for name in names:
        store.upload(folder / name, prefix + name)
    listing = folder.parent / f"{folder.name}.files.json"
    listing.write_text(json.dumps({"files": names}), encoding="utf-8")
    store.upload(listing, part_manifest_key(run_id, kind, shard), content_type="application/json")


def download_part(run_id: str, kind: str, shard: int, *, store: ObjectStorage, folder: Path) -> Path:
    """Shard ``shard``'s ``kind`` part, downloaded into ``folder``."""
    listing = folder.parent / f"{folder.name}.files.json"
    try:
        store.download(part_manifest_key(run_id, kind, shard), listing)
    except MissingObject:
        raise MissingPart(f"the {kind} part of shard {shard + 1} was never written") from None
    names = json.loads(listing.read_text(encoding="utf-8"))["files"]
    prefix = part_prefix(run_id, kind, shard)
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts:
            raise MissingPart(f"the {kind} part of shard {shard + 1} lists a file outside it: {name}")
        store.download(prefix + name, folder.joinpath(*relative.parts))
    return folder


def download_parts(run_id: str, kind: str, count: int, *, store: ObjectStorage, folder: Path) -> list[Path]:
    """Every shard's ``kind`` part, in shard order, each in its own folder under ``folder``."""
    return [
        download_part(run_id, kind, shard, store=store, folder=folder / f"{shard:05d}")
        for shard in range(count)
    ]
