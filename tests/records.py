"""Records the tests store directly, built in one place for the unit tests on the fakes and the integration
tests on the tables alike."""

from __future__ import annotations

from benchgen.records.datasets import DatasetRecord


def dataset(run_id: str, created_at: str, kind: str = "finetune") -> DatasetRecord:
    return DatasetRecord(
        dataset_id=f"ds-{run_id}",
        kind=kind,
        name=f"GSM8K · qwen · 50.0% · Jun 2026 ({run_id})",
        run_id=run_id,
        environment_id="gsm8k",
        environment_version="1",
        benchmark="GSM8K",
        base_model="qwen",
        selection_criterion="wrong_plus_augmented",
        example_count=200,
        train_count=160,
        validation_count=20,
        test_count=20,
        artifact_key=f"runs/{run_id}/finetune_artifact.zip",
        artifact_sha256="0" * 64,
        created_at=created_at,
    )
