"""The evaluation report: the comparison with the identities that make it checkable, on the page too."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.compare.report import NOT_ESTABLISHED_HEADLINE, compare_runs
from benchgen.compare.selection import PackageRef
from benchgen.evaluation.report import evaluation_report, render_report
from benchgen.records.evaluations import EvaluatedModel, EvaluationRecord
from benchgen.records.runs import LiveModel
from tests.unit.compare_inputs import AFTER, BEFORE, outcomes


def _evaluation(tuned_run: str | None = "run-tuned") -> EvaluationRecord:
    def side(model: str, run_id: str | None, reused: bool) -> EvaluatedModel:
        live = LiveModel(connection_id="conn-1", provider="openai-compatible", model_id=model)
        return EvaluatedModel(live=live, run_id=run_id, reused=reused)

    return EvaluationRecord(
        evaluation_id="eval-1",
        owner="bob",
        training_run_id="train-1",
        training_owner="alice",
        package_id="pkg-1",
        package_sha256="ab" * 32,
        environment_id="gsm8k",
        environment_version="v1",
        trained_model="ft:base-7b:acme:2026",
        tuned=side("base-7b-lora", tuned_run, False),
        base=side("base-7b", "run-base", True),
        authorized_by="alice",
        authorized_through="grant by alice",
        authorized_at="2026-12-01T10:00:00.000000Z",
    )


def test_the_report_names_the_package_both_models_and_who_authorized_it(tmp_path: Path) -> None:
    # Given two runs' verdicts on the package's three held-out cases
    before = outcomes(tmp_path / "before.zip", {"a": False, "b": True, "c": True})
    after = outcomes(tmp_path / "after.zip", {"a": True, "b": True, "c": True})
    package = PackageRef(package_id="pkg-1", sha256="ab" * 32, held_out=("a", "b", "c"))
    comparison = compare_runs(BEFORE, before, AFTER, after, cases=["a", "b", "c"], package=package)

    # When the evaluation's report is assembled and rendered
    report = evaluation_report(_evaluation(), comparison)
    page = render_report(report)

    # Then it keeps the identities beside the comparison, and the page shows them
    assert (report.package_id, report.package_sha256, report.trained_model) == (
        "pkg-1",
        "ab" * 32,
        "ft:base-7b:acme:2026",
    )
    assert (report.tuned.model_called, report.base.model_called, report.base.reused_run) == (
        "base-7b-lora",
        "base-7b",
        True,
    )
    assert report.comparison.fixed_count == 1
    assert "Trained model (as the provider named it): <code>ft:base-7b:acme:2026</code>" in page
    assert (
        "Model id called for the base model: <code>base-7b via openai-compatible (an existing run, reused)"
        in page
    )
    assert "by alice through grant by alice at 2026-12-01T10:00:00.000000Z" in page
    assert NOT_ESTABLISHED_HEADLINE in page


def test_a_report_needs_both_runs_chosen(tmp_path: Path) -> None:
    before = outcomes(tmp_path / "before.zip", {"a": True})
    comparison = compare_runs(BEFORE, before, AFTER, before)
    with pytest.raises(ValueError, match="runs are not chosen yet"):
        evaluation_report(_evaluation(tuned_run=None), comparison)
