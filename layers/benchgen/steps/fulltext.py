"""Whole texts for what the run record shows cut short: a long reason, many warnings."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from benchgen.outputs import RunOutput
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.bounds import exceeds_bounds


def keep_whole(
    texts: list[str],
    *,
    key: str,
    output: RunOutput,
    run_id: str,
    store: ObjectStorage,
    runs: RunsStore,
    workdir: Path,
) -> None:
    """When the record would cut ``texts`` short, keep them whole at ``key``, linked as ``output``."""
    if not exceeds_bounds(texts):
        return
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / PurePosixPath(key).name
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    store.upload(path, key, content_type="text/plain; charset=utf-8")
    runs.add_files(run_id, {output: key})
