"""Reading a finetune artifact's manifest: the automatic and the manual dataset save both rely on it."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest

from benchgen.datasets import ArtifactManifestError, read_artifact_manifest

MANIFEST: dict[str, Any] = {
    "kind": "finetune",
    "dataset_name": "GSM8K · qwen · 72.5% · Jun 2026",
    "benchmark": "GSM8K",
    "base_model": "qwen",
    "selection_criterion": "wrong_plus_augmented",
    "example_count": 200,
    "splits": {"counts": {"train": 160, "validation": 20, "test": 20}, "rule": "hash"},
    "files": {"data/messages.jsonl": {"sha256": "0" * 64}},
}


def artifact(members: dict[str, str]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    buffer.seek(0)
    return buffer


def test_the_builders_manifest_gives_counts_and_names() -> None:
    manifest = read_artifact_manifest(artifact({"manifest.json": json.dumps(MANIFEST)}))
    assert (manifest.dataset_name, manifest.base_model, manifest.example_count) == (
        "GSM8K · qwen · 72.5% · Jun 2026",
        "qwen",
        200,
    )
    assert (manifest.splits.train, manifest.splits.validation, manifest.splits.test) == (160, 20, 20)


def test_flat_split_counts_are_read_too() -> None:
    flat = {**MANIFEST, "splits": {"train": 8, "validation": 1, "test": 1}}
    assert read_artifact_manifest(artifact({"manifest.json": json.dumps(flat)})).splits.train == 8


def test_an_artifact_without_a_manifest_is_refused() -> None:
    with pytest.raises(ArtifactManifestError, match=r"has no manifest\.json"):
        read_artifact_manifest(artifact({"README.md": "hi"}))


def test_a_file_that_is_not_a_zip_is_refused() -> None:
    with pytest.raises(ArtifactManifestError, match="not a readable zip"):
        read_artifact_manifest(io.BytesIO(b"not a zip"))


def test_a_manifest_missing_a_field_names_it() -> None:
    broken = {key: value for key, value in MANIFEST.items() if key != "base_model"}
    with pytest.raises(ArtifactManifestError, match="base_model: Field required"):
        read_artifact_manifest(artifact({"manifest.json": json.dumps(broken)}))


def test_a_manifest_that_is_not_json_is_refused() -> None:
    with pytest.raises(ArtifactManifestError, match=r"unusable manifest\.json: not valid JSON"):
        read_artifact_manifest(artifact({"manifest.json": "{"}))
