"""`benchgen demo`, the README's main job, end to end on the local cloud."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchgen.training.package import package_id
from cli.main import main


def test_the_demo_follows_a_run_to_a_saved_dataset_and_writes_its_files(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    stack_templates: dict[str, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given the session's synthesis of the stacks, the same one the demo would make again
    monkeypatch.setattr("infra.synth.synth_stacks", lambda context=None: copy.deepcopy(stack_templates))
    # and the quiet handler logging the demo asks for, set here so that it ends with this test
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")

    # when the demo runs on the Turkish math example
    code = main(["demo", "--out", str(tmp_path), "--model", "Qwen2.5-7B-LoRA"])

    # then the run completed, its dataset was saved, and the run's files and summary were written
    assert code == 0
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["status"] == "Completed"
    assert summary["overall_score"] == pytest.approx(0.7)
    assert summary["metrics"]["accuracy"] == pytest.approx(0.7)
    assert summary["execution_status"] == "SUCCEEDED"
    assert re.fullmatch(
        r"GSM8K-TR · Qwen2\.5-7B-LoRA · 70\.0% · [A-Z][a-z]{2} \d{4}", summary["dataset_name"]
    )
    assert summary["dataset_id"] == f"ds-{summary['run_id']}"
    for name in (
        "scoring_output.zip",
        "detailed_results.html",
        "detailed_results.json",
        "finetune_artifact.zip",
    ):
        assert (tmp_path / name).stat().st_size > 0
        assert f"runs/{summary['run_id']}/{name}" in summary["s3_keys"]
    printed = capsys.readouterr().out
    assert "state machine: EmitDatasetSaved" in printed
    assert f"Saved dataset: {summary['dataset_name']}" in printed

    # and a preparation of the run was generated and packaged for OpenAI chat, the zip written beside it
    preparation, package = summary["preparation"], summary["package"]
    assert preparation["status"] == "Ready"
    assert re.fullmatch(r"prep-[0-9a-f]{32}", preparation["preparation_id"])
    assert re.fullmatch(r"[0-9a-f]{64}", preparation["state_hash"])
    assert preparation["example_count"] > 0
    assert all(isinstance(message, str) and message for message in preparation["coverage_gaps"])
    assert package["status"] == "Ready"
    assert package["package_id"] == package_id(preparation["state_hash"], "openai-chat")
    written = (tmp_path / f"{package['package_id']}.zip").read_bytes()
    assert hashlib.sha256(written).hexdigest() == package["sha256"]
    assert f"packages/{package['package_id']}.zip" in summary["s3_keys"]
    assert f"Package {package['package_id']}: {len(written)} bytes, sha256 {package['sha256']}" in printed
    for message in preparation["coverage_gaps"]:
        assert f"  gap: {message}" in printed
    # and each gap says why an example this small has it: none of its 15 wrong cases (30% of 50, the 70%
    # scored above) falls in the validation split
    wrong = sum(
        1
        for case in json.loads((tmp_path / "detailed_results.json").read_text())["cases"]
        if not case["passed"]
    )
    assert wrong == 15
    reasons = preparation["coverage_gap_reasons"]
    assert len(reasons) == len(preparation["coverage_gaps"]) and all(reasons)
    for message, reason in zip(preparation["coverage_gaps"], reasons, strict=True):
        assert f"  gap: {message}\n       ({reason})\n" in printed
    assert (
        "expected for this 50-case example with 15 wrong cases: 0 of them hash into validation, "
        "the split of 10% of the cases"
    ) in reasons
    # and nothing but the demo's own lines: no state machine evaluation noise from moto
    assert [record.getMessage() for record in caplog.records if record.name.startswith("moto.")] == []
