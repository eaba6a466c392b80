"""The artifact pipeline's task: build the run's finetune artifact and save it as the run's dataset.

The task writes every record the pipeline changes (the run's artifact status, the dataset, the run's link
to it) through the tables' own modules; the state machine only branches on the answer and announces
DatasetSaved. A dataset is saved by :func:`save_dataset` alone, here and in the API's manual save.
"""

from __future__ import annotations

from pathlib import Path

from aws_lambda_powertools import Logger

from benchgen.bucket_layout import ARTIFACT_PART, run_key
from benchgen.datasets import dataset_record
from benchgen.errors import BenchGenError
from benchgen.finetune.artifact import NO_FINETUNE, ArtifactReport, build_artifact, finish_artifact
from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput
from benchgen.ports.datasets import DatasetsStore
from benchgen.ports.environments import EnvironmentsReader
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.datasets import DatasetRecord
from benchgen.records.environments import EnvironmentRecord
from benchgen.records.runs import ArtifactStatus, RunInfo, RunRecord, RunStatus
from benchgen.steps.context import open_run_environment, registered_version
from benchgen.steps.shard_parts import download_parts

logger = Logger(child=True)


class ArtifactBuild(LazyModel):
    """The task's answer, what the state machine branches on and announces: whether an artifact was
    ``emitted`` (and if not, the ``reason``), whether this build ``saved`` its dataset (``False`` when an
    earlier save stored it), and the ``dataset``."""

    emitted: bool
    saved: bool = False
    reason: str | None = None
    dataset: DatasetRecord | None = None


class RunNotCompleted(BenchGenError):
    """The artifact is built from a completed run only."""


class RunMissing(BenchGenError):
    """The run the pipeline works for is not in the table."""


def save_dataset(record: DatasetRecord, *, datasets: DatasetsStore, runs: RunsStore) -> bool:
    """Store the run's dataset and link the run to it; ``False`` (nothing changed) when it is saved already.

    The one way a dataset is saved: the artifact pipeline and the owner's manual save both come here. The
    dataset id derives from the run id and the put is conditional, so of all the saves of one run exactly
    one stores and links it.
    """
    if not datasets.put_if_absent(record):
        return False
    runs.link_dataset(record.run_id, dataset_id=record.dataset_id, dataset_name=record.name)
    return True


def build_run_artifact(
    run_id: str,
    *,
    store: ObjectStorage,
    runs: RunsStore,
    environments: EnvironmentsReader,
    datasets: DatasetsStore,
    workdir: Path,
) -> ArtifactBuild:
    """Build the artifact, upload it and save its dataset, or record on the run why there is none."""
    run = runs.get(run_id)
    if run is None or run.status is not RunStatus.COMPLETED:
        raise RunNotCompleted(f"run {run_id} is not completed: no artifact can be built from it")
    version = registered_version(run, environments)
    # Registration read the bundle's spec and recorded whether it has a finetune section: without one
    # there is no artifact, and nothing to download to find that out.
    report = (
        _build(run, version, store=store, workdir=workdir)
        if version.has_finetune
        else ArtifactReport(emitted=False, reason=NO_FINETUNE)
    )
    if not report.emitted:
        assert report.reason is not None  # an artifact not emitted always says why
        runs.artifact_not_emitted(run_id, report.reason)
        return ArtifactBuild(emitted=False, reason=report.reason)
    assert report.path is not None and report.sha256 is not None and report.manifest is not None

    key = run_key(run_id, RunOutput.FINETUNE_ARTIFACT.file_name)
    store.upload(report.path, key, content_type="application/zip")
    runs.add_files(run_id, {RunOutput.FINETUNE_ARTIFACT: key})
    record = dataset_record(run, report.manifest, artifact_key=key, artifact_sha256=report.sha256)
    saved = save_dataset(record, datasets=datasets, runs=runs)
    return ArtifactBuild(emitted=True, saved=saved, dataset=record)


def _build(
    run: RunRecord, version: EnvironmentRecord, *, store: ObjectStorage, workdir: Path
) -> ArtifactReport:
    """The artifact of the run's verdicts, written under ``workdir``: a whole run's from its scoring output,
    a sharded run's merged from the artifact parts its shards collected (see benchgen.steps.shards)."""
    env = open_run_environment(run, version, store=store, workdir=workdir / "env")
    info = RunInfo.from_record(run, benchmark=env.spec.title)
    if run.shards is not None:
        parts = download_parts(
            run.run_id, ARTIFACT_PART, run.shards.count, store=store, folder=workdir / "parts"
        )
        return finish_artifact(env, parts, workdir / "out", run=info)
    name = RunOutput.SCORING_OUTPUT.file_name
    scoring_output = store.download(run_key(run.run_id, name), workdir / name)
    return build_artifact(env, scoring_output, workdir / "out", run=info)


def record_artifact_failure(run_id: str, reason: str, *, runs: RunsStore) -> None:
    """The pipeline's caught failure, as the run's artifact status and reason; a run whose dataset is
    saved keeps it (a failure caught after the save, announcing it, or a late or repeated failure event)."""
    run = runs.get(run_id)
    if run is not None and run.artifact_status is ArtifactStatus.SAVED:
        logger.warning(
            "artifact failure after its dataset was saved: the run keeps it",
            extra={"run_id": run_id, "dataset_id": run.dataset_id, "reason": reason},
        )
        return
    if not runs.artifact_failed(run_id, reason):
        raise RunMissing(
            f"run {run_id} does not exist: its artifact's failure ({reason}) has no run to go on"
        )
