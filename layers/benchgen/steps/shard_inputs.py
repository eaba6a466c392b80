"""A sharded run's inputs, written by ingest beside the whole prediction output.

For each shard, a ``prediction_output.zip`` in exactly the whole one's format, holding the records of the
shard's cases only (the same record text, in case order) and the same metadata object; and the items list
the ShardedScoring Map iterates over. A shard is then scored by the same code as a whole run.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from benchgen.bucket_layout import prediction_shard_key, shard_items_key
from benchgen.environment import Environment
from benchgen.errors import BenchGenError
from benchgen.ports.storage import ObjectStorage
from benchgen.records.environments import EnvironmentRecord, ShardPlan
from benchgen.records.runs import RunRecord
from benchgen.steps.case_shards import case_lines, shardable
from benchgen.zipwrite import entry

PREDICTIONS_MEMBER = "predictions.json"
_OPENING = b'{"predictions": ['
_CLOSING = b"],"
_METADATA = b'"metadata": '


class ShardInputError(BenchGenError):
    """The prediction output or the cases do not match the shard plan registration recorded."""


def shard_plan(run: RunRecord, env: Environment, record: EnvironmentRecord) -> ShardPlan | None:
    """The plan a run is scored in shards by; ``None`` for a run that runs whole.

    A run of chosen cases runs whole, and so does a run of a task registration did not cut (registered
    before shards existed, at most one shard's worth of cases, or not scored by a built-in template).
    """
    if run.case_scope is not None or not shardable(env):
        return None
    plan = next((plan for plan in record.case_shards if plan.task == env.task.index), None)
    return plan if plan is not None and plan.count > 1 else None


def _records(member: IO[bytes]) -> Iterator[bytes]:
    """The records of a predictions.json as ingest writes it, one a line; stops at the closing bracket."""
    if member.readline().rstrip(b"\n") != _OPENING:
        raise ShardInputError(f"the prediction output does not start with {_OPENING.decode()}")
    for line in member:
        if line.rstrip(b"\n") == _CLOSING:
            return
        yield line.rstrip(b"\n").removesuffix(b",")
    raise ShardInputError("the prediction output ends inside its predictions")


def _metadata(prediction_output: Path) -> bytes:
    """The metadata object's text: it follows the records, and every shard's output needs it first."""
    with zipfile.ZipFile(prediction_output) as archive, archive.open(PREDICTIONS_MEMBER) as member:
        for _ in _records(member):
            pass
        last = member.readline().rstrip(b"\n")
    if not (last.startswith(_METADATA) and last.endswith(b"}")):
        raise ShardInputError("the prediction output has no metadata line after its predictions")
    return last[len(_METADATA) : -1]


def _case_ids(cases: Path) -> Iterator[str]:
    for line in case_lines(cases):
        yield str(json.loads(line)["id"])


class _ShardOutput:
    """One shard's prediction output as ingest writes one (see benchgen.ingest), streamed record by record."""

    def __init__(self, path: Path, metadata: bytes) -> None:
        self.path = path
        self._metadata = metadata
        self._archive = zipfile.ZipFile(path, "w")
        self._target = self._archive.open(entry(PREDICTIONS_MEMBER), "w")
        self._target.write(_OPENING)
        self._count = 0

    def add(self, record: bytes) -> None:
        self._target.write((b",\n" if self._count else b"\n") + record)
        self._count += 1

    def close(self) -> Path:
        self._target.write(b"\n" + _CLOSING + b"\n" + _METADATA + self._metadata + b"}\n")
        self._target.close()
        self._archive.close()
        return self.path


def split_prediction_output(
    prediction_output: Path, cases: Path, plan: ShardPlan, workdir: Path
) -> Iterator[tuple[int, Path]]:
    """Each shard's prediction output, written to ``workdir`` one at a time (the caller uploads it before
    asking for the next); a record goes to the shard of its case's position in ``cases``."""
    workdir.mkdir(parents=True, exist_ok=True)
    metadata = _metadata(prediction_output)
    with zipfile.ZipFile(prediction_output) as archive, archive.open(PREDICTIONS_MEMBER) as member:
        records = _records(member)
        pending = next(records, None)
        output: _ShardOutput | None = None
        seen = 0
        for case_id in _case_ids(cases):
            if output is None:
                output = _ShardOutput(workdir / "shard.zip", metadata)
            if pending is not None and json.loads(pending)["id"] == case_id:
                output.add(pending)
                pending = next(records, None)
            seen += 1
            if seen % plan.size == 0:
                yield seen // plan.size - 1, output.close()
                output = None
        if pending is not None or seen != plan.cases:
            raise ShardInputError(
                f"the prediction output and the {seen} cases do not match the {plan.cases} cases "
                "registration cut into shards; register the environment version again"
            )
        if output is not None:
            yield seen // plan.size, output.close()


def write_shard_inputs(
    run_id: str, prediction_output: Path, cases: Path, plan: ShardPlan, *, store: ObjectStorage, workdir: Path
) -> None:
    """Upload each shard's prediction output, then the items list the Map iterates over."""
    shards = 0
    for shard, path in split_prediction_output(prediction_output, cases, plan, workdir):
        store.upload(path, prediction_shard_key(run_id, shard), content_type="application/zip")
        shards += 1
    if shards != plan.count:
        raise ShardInputError(f"the cases made {shards} shards, not the {plan.count} registration cut")
    items = workdir / "items.json"
    items.write_text(json.dumps([{"run_id": run_id, "shard": shard} for shard in range(shards)]), "utf-8")
    store.upload(items, shard_items_key(run_id), content_type="application/json")
