"""What ``/datasets`` does, and the manual save of a run's finetune artifact as a dataset."""

from __future__ import annotations

import hashlib
import tempfile

from aws_lambda_powertools import Logger

from benchgen.datasets import ArtifactManifestError, dataset_record, read_artifact_manifest
from benchgen.outputs import RunOutput
from benchgen.records.datasets import DatasetRecord, dataset_id_for
from benchgen.requests.errors import Conflict, Forbidden, NotFound
from benchgen.requests.runs import run_or_404
from benchgen.requests.schemas.datasets import DatasetList
from benchgen.requests.services import ApiServices
from benchgen.steps.artifact import save_dataset

logger = Logger(child=True)

NO_ARTIFACT = "the run has no finetune artifact"
ALREADY_SAVED = "dataset already saved for this run"


def save_dataset_for_run(run_id: str, *, owner: str, services: ApiServices) -> DatasetRecord:
    """Save the run's finetune artifact as its dataset, once, and link the run to it.

    For runs whose automatic save did not happen; only the run's owner may ask. The save itself is the
    artifact pipeline's (``save_dataset``), so this and the state machine cannot both save one.
    """
    run = run_or_404(services, run_id)
    if run.owner != owner:
        raise Forbidden("only the run's owner can save its dataset")
    key = run.files.get(RunOutput.FINETUNE_ARTIFACT)
    if key is None:
        reason = f" ({run.artifact_reason})" if run.artifact_reason else ""
        raise Conflict(f"{NO_ARTIFACT}{reason}")
    dataset_id = dataset_id_for(run.run_id)
    if services.datasets.get(dataset_id) is not None:
        raise Conflict(f"{ALREADY_SAVED}: {dataset_id}")
    digest = hashlib.sha256()
    with tempfile.TemporaryFile() as artifact:
        chunks = services.store.chunks(key)
        if chunks is None:
            raise Conflict(f"{NO_ARTIFACT}: {key} is missing from the bucket")
        for chunk in chunks:
            digest.update(chunk)
            artifact.write(chunk)
        artifact.seek(0)
        try:
            manifest = read_artifact_manifest(artifact)
        except ArtifactManifestError as error:
            raise Conflict(str(error)) from None
    record = dataset_record(run, manifest, artifact_key=key, artifact_sha256=digest.hexdigest())
    if not save_dataset(record, datasets=services.datasets, runs=services.runs):
        raise Conflict(f"{ALREADY_SAVED}: {dataset_id}")
    _announce(services, record)
    services.record_event("DatasetSaved")
    return record


def _announce(services: ApiServices, record: DatasetRecord) -> None:
    """Emit DatasetSaved, as the state machine does for automatic saves."""
    detail = {"dataset_id": record.dataset_id, "run_id": record.run_id, "name": record.name}
    try:
        services.publisher.publish("DatasetSaved", detail)
    except Exception:
        # The dataset is saved and linked: a lost (or refused) notification must not turn that into an
        # error the user would retry (and then be told the dataset exists).
        logger.exception("could not emit DatasetSaved", extra=detail)


def list_datasets(
    *, services: ApiServices, kind: str | None, limit: int, next_token: str | None
) -> DatasetList:
    page = services.datasets.list(kind=kind, limit=limit, next_token=next_token)
    return DatasetList(items=page.items, next_token=page.next_token)


def dataset_or_404(dataset_id: str, *, services: ApiServices) -> DatasetRecord:
    dataset = services.datasets.get(dataset_id)
    if dataset is None:
        raise NotFound(f"no dataset {dataset_id!r}: check the id (GET /datasets lists datasets)")
    return dataset
