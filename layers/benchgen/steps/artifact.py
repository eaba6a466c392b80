"""The state machine's BuildArtifact task: build the run's finetune artifact and describe its dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchgen.datasets import dataset_record
from benchgen.errors import BenchGenError
from benchgen.finetune.artifact import build_artifact, finish_artifact
from benchgen.outputs import RunOutput
from benchgen.ports.environments import EnvironmentsReader
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records import RunInfo, RunStatus
from benchgen.steps.context import open_run_environment
from benchgen.steps.keys import ARTIFACT_PART, run_key
from benchgen.steps.shard_parts import download_parts


class RunNotCompleted(BenchGenError):
    """The artifact is built from a completed run only."""


def build_run_artifact(
    run_id: str, *, store: ObjectStorage, runs: RunsStore, environments: EnvironmentsReader, workdir: Path
) -> dict[str, Any]:
    """The task's answer: ``emitted``, ``reason`` and the dataset record with every value as a string.

    Strings because the next task maps each field into a DynamoDB attribute from the execution's JSON.
    """
    run = runs.get(run_id)
    if run is None or run.status is not RunStatus.COMPLETED:
        raise RunNotCompleted(f"run {run_id} is not completed: no artifact can be built from it")
    env = open_run_environment(run, environments=environments, store=store, workdir=workdir / "env")
    info = RunInfo.from_record(run, benchmark=env.spec.title)
    if run.shards is not None:
        # Each shard collected its examples (see benchgen.steps.shards): merged here, in order.
        parts = download_parts(run_id, ARTIFACT_PART, run.shards.count, store=store, folder=workdir / "parts")
        report = finish_artifact(env, parts, workdir / "out", run=info)
    else:
        name = RunOutput.SCORING_OUTPUT.file_name
        scoring_output = store.download(run_key(run_id, name), workdir / name)
        report = build_artifact(env, scoring_output, workdir / "out", run=info)
    if not report.emitted or report.path is None or report.sha256 is None or report.manifest is None:
        return {"emitted": False, "reason": report.reason, "dataset": None}

    key = run_key(run_id, RunOutput.FINETUNE_ARTIFACT.file_name)
    store.upload(report.path, key, content_type="application/zip")
    runs.add_files(run_id, {RunOutput.FINETUNE_ARTIFACT: key})
    record = dataset_record(run, report.manifest, artifact_key=key, artifact_sha256=report.sha256)
    return {
        "emitted": True,
        "reason": None,
        "dataset": {name: str(value) for name, value in record.model_dump(mode="json").items()},
    }
