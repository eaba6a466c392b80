"""A run's finetune artifact, described as the dataset record that is saved once per run.

The state machine's automatic save and the API's manual save both build the record here.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import IO, Any

from pydantic import ConfigDict, Field, ValidationError, model_validator

from benchgen.errors import BenchGenError
from benchgen.lazy_model import LazyModel
from benchgen.records.datasets import DatasetRecord, dataset_id_for
from benchgen.records.runs import RunRecord

MANIFEST_NAME = "manifest.json"
_MANIFEST_LIMIT = 16 << 20  # a manifest lists files and counts; anything larger is not one of ours


class ArtifactManifestError(BenchGenError):
    """The artifact has no usable manifest.json."""


class SplitCounts(LazyModel):
    train: int = Field(ge=0)
    validation: int = Field(ge=0)
    test: int = Field(ge=0)


class ArtifactManifest(LazyModel):
    """The fields of an artifact's ``manifest.json`` that a dataset record needs."""

    model_config = ConfigDict(extra="ignore")

    kind: str = "finetune"
    dataset_name: str = Field(min_length=1)
    benchmark: str
    base_model: str
    selection_criterion: str
    example_count: int = Field(ge=0)
    splits: SplitCounts

    @model_validator(mode="before")
    @classmethod
    def _split_counts(cls, data: Any) -> Any:
        # The builder nests the counts beside the split rule: {"counts": {...}, "rule": "..."}.
        if isinstance(data, dict) and isinstance(data.get("splits"), dict) and "counts" in data["splits"]:
            return {**data, "splits": data["splits"]["counts"]}
        return data


def read_artifact_manifest(artifact: IO[bytes] | Path) -> ArtifactManifest:
    """The manifest of a finetune artifact zip; :class:`ArtifactManifestError` naming the problem."""
    try:
        with zipfile.ZipFile(artifact) as archive:
            info = archive.getinfo(MANIFEST_NAME)
            if info.file_size > _MANIFEST_LIMIT:
                raise ArtifactManifestError(f"the run's finetune artifact has an oversized {MANIFEST_NAME}")
            raw = archive.read(info)
    except KeyError:
        raise ArtifactManifestError(f"the run's finetune artifact has no {MANIFEST_NAME}") from None
    except zipfile.BadZipFile:
        raise ArtifactManifestError("the run's finetune artifact is not a readable zip file") from None
    try:
        return ArtifactManifest.model_validate(json.loads(raw))
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
        raise ArtifactManifestError(
            f"the run's finetune artifact has an unusable {MANIFEST_NAME}: {problems}"
        ) from None
    except ValueError:
        raise ArtifactManifestError(
            f"the run's finetune artifact has an unusable {MANIFEST_NAME}: not valid JSON"
        ) from None


def dataset_record(
    run: RunRecord, manifest: ArtifactManifest, *, artifact_key: str, artifact_sha256: str
) -> DatasetRecord:
    return DatasetRecord(
        dataset_id=dataset_id_for(run.run_id),
        kind=manifest.kind,
        name=manifest.dataset_name,
        run_id=run.run_id,
        environment_id=run.environment_id,
        environment_version=run.environment_version,
        benchmark=manifest.benchmark,
        base_model=manifest.base_model,
        selection_criterion=manifest.selection_criterion,
        example_count=manifest.example_count,
        train_count=manifest.splits.train,
        validation_count=manifest.splits.validation,
        test_count=manifest.splits.test,
        artifact_key=artifact_key,
        artifact_sha256=artifact_sha256,
    )
