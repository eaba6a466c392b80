"""Which runs are scored in shards, and the cutting of a task's cases into shard files at registration.

Only a phase of one task scored by a built-in template (no scoring program, no ingestion program) is
scored in shards: a program sees the whole run, and a phase of several tasks combines its tasks' outputs.
Shard n of a task holds the non-blank lines [n * size, (n + 1) * size) of its ``cases.jsonl``, verbatim
and in order, so that a shard is judged exactly as those lines are within the whole run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from benchgen.bucket_layout import case_shard_key
from benchgen.environment import Environment
from benchgen.ports.storage import ObjectStorage
from benchgen.records.environments import ShardPlan

JSONL = "application/jsonl"


def shardable(env: Environment) -> bool:
    """Whether runs of ``env``'s phase may be scored in shards."""
    return len(env.phase_tasks()) == 1 and env.template is not None and not env.task.ingestion_program


def shardable_tasks(env: Environment) -> dict[int, Environment]:
    """Each task (by its index) that some phase scores in shards, seen through the first such phase."""
    found: dict[int, Environment] = {}
    for position in range(max(1, len(env.spec.phases))):
        view = env.phase_view(position)
        if shardable(view):
            found.setdefault(view.task.index, view)
    return found


def case_lines(path: Path) -> Iterator[bytes]:
    """The non-blank lines of a ``cases.jsonl``, verbatim, each ending in a newline.

    Blank as the case reader sees it: nothing but whitespace once decoded (a byte order mark first).
    """
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if line.decode("utf-8-sig" if number == 1 else "utf-8", errors="replace").strip():
                yield line if line.endswith(b"\n") else line + b"\n"


def cut_cases(
    env: Environment,
    *,
    environment_id: str,
    version: str,
    size: int,
    store: ObjectStorage,
    workdir: Path,
) -> ShardPlan:
    """Upload the task's cases as shards of ``size`` lines when it has more than ``size`` cases.

    Each shard file is uploaded as soon as it is full, so disk holds one shard at a time. A task of at most
    ``size`` cases gets a plan of one shard and no files: its runs run whole.
    """
    task = env.task.index
    workdir.mkdir(parents=True, exist_ok=True)
    cases = env.cases_path
    total = sum(1 for _ in case_lines(cases))
    if total <= size:
        return ShardPlan(task=task, cases=total, size=size, count=1)
    shard = 0
    path = workdir / "shard.jsonl"
    out = path.open("wb")
    try:
        for position, line in enumerate(case_lines(cases)):
            if position and position % size == 0:
                out.close()
                store.upload(path, case_shard_key(environment_id, version, task, shard), content_type=JSONL)
                shard += 1
                out = path.open("wb")
            out.write(line)
    finally:
        out.close()
    store.upload(path, case_shard_key(environment_id, version, task, shard), content_type=JSONL)
    path.unlink()
    return ShardPlan(task=task, cases=total, size=size, count=shard + 1)
