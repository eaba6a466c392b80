"""The evaluation's Check step: both runs finished, a failed run, and the bounded wait."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.records import (
    EvaluatedModel,
    EvaluationRecord,
    LiveModel,
    RunRecord,
    RunStatus,
)
from benchgen.steps.evaluation import EvaluationError, check


class _Evaluations:
    def __init__(self, record: EvaluationRecord) -> None:
        self.record = record

    def get(self, evaluation_id: str) -> EvaluationRecord | None:
        return self.record if evaluation_id == self.record.evaluation_id else None


class _Runs:
    def __init__(self, *runs: RunRecord) -> None:
        self.runs = {run.run_id: run for run in runs}

    def get(self, run_id: str) -> RunRecord | None:
        return self.runs.get(run_id)


def _side(run_id: str, model: str) -> EvaluatedModel:
    live = LiveModel(
        connection_id="conn-1", provider="openai-compatible", model_id=model, base_url="http://127.0.0.1:1/v1"
    )
    return EvaluatedModel(live=live, run_id=run_id)


def _evaluation() -> EvaluationRecord:
    return EvaluationRecord(
        evaluation_id="eval-1",
        owner="alice",
        training_run_id="train-1",
        training_owner="alice",
        package_id="pkg-1",
        package_sha256="ab" * 32,
        environment_id="gsm8k-tr",
        environment_version="v1",
        trained_model="example-tuned",
        tuned=_side("run-tuned", "example-tuned"),
        base=_side("run-base", "example-base"),
        authorized_by="alice",
        authorized_through="group evaluators",
        authorized_at="2026-12-01T10:00:00Z",
    )


def _run(run_id: str, status: RunStatus, reason: str | None = None) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        environment_id="gsm8k-tr",
        environment_version="v1",
        model="m",
        owner="alice",
        status=status,
        failure_reason=reason,
    )


def _check(polls: int, max_checks: int, *runs: RunRecord) -> dict[str, Any]:
    fakes: Any = (_Evaluations(_evaluation()), _Runs(*runs))
    return check("eval-1", polls, max_checks, evaluations=fakes[0], runs=fakes[1])


def test_both_runs_completed_is_finished() -> None:
    answer = _check(2, 10, _run("run-tuned", RunStatus.COMPLETED), _run("run-base", RunStatus.COMPLETED))
    assert answer == {"finished": True, "polls": 3}


def test_a_run_still_going_is_checked_again_until_the_last_check() -> None:
    runs = (_run("run-tuned", RunStatus.RUNNING), _run("run-base", RunStatus.COMPLETED))
    assert _check(0, 3, *runs) == {"finished": False, "polls": 1}
    with pytest.raises(EvaluationError) as timed_out:
        _check(2, 3, *runs)
    assert str(timed_out.value) == (
        "the runs did not finish within 3 checks: the trained model's run run-tuned is Running and the base "
        "model's run run-base is Completed; request the evaluation again (a completed base run is reused)"
    )


def test_a_failed_run_fails_the_evaluation_with_its_reason() -> None:
    runs = (
        _run("run-tuned", RunStatus.FAILED, "the model example-tuned did not answer"),
        _run("run-base", RunStatus.RUNNING),
    )
    with pytest.raises(EvaluationError) as failed:
        _check(0, 10, *runs)
    assert str(failed.value) == (
        "the trained model's run run-tuned failed: the model example-tuned did not answer"
    )
