"""Which earlier run may stand for the base model in an evaluation, over the in-memory runs and bucket:
the owner's newest Completed run of the same model that judged every held-out case, on the same version."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchgen.outputs import RunOutput
from benchgen.records.runs import CaseScope, LiveModel, RunRecord, RunStatus
from benchgen.steps.base_run import BaseRunProblem, covers_held_out, reusable_base_run
from tests.fakes import MemoryRuns, MemoryStore
from tests.training_material import training_run

HELD_OUT = ("c1", "c2", "c3")
BASE = LiveModel(
    connection_id="conn-1", provider="openai-compatible", model_id="base-7b", base_url="http://m/v1"
)
TRAINING = training_run(environment_id="gsm8k-tr")


def _run(run_id: str, created_at: str, **fields: Any) -> RunRecord:
    values: dict[str, Any] = {
        "run_id": run_id,
        "environment_id": "gsm8k-tr",
        "environment_version": "v1",
        "model": "base-7b",
        "owner": "alice",
        "status": RunStatus.COMPLETED,
        "live_model": BASE,
        "files": {RunOutput.SCORING_OUTPUT: f"runs/{run_id}/scoring_output.zip"},
        "created_at": created_at,
    }
    return RunRecord.model_validate(values | fields)


def _scope(store: MemoryStore, run_id: str, case_ids: list[str]) -> CaseScope:
    key = f"runs/{run_id}/case_scope.json"
    store.objects[key] = json.dumps({"case_ids": case_ids}).encode()
    return CaseScope(key=key, count=len(case_ids))


def _reusable(runs: MemoryRuns, store: MemoryStore) -> RunRecord | None:
    return reusable_base_run(runs, TRAINING, BASE, HELD_OUT, owner="alice", store=store)


def test_the_newest_completed_run_of_the_base_model_is_reused() -> None:
    runs = MemoryRuns(
        _run("run-older", "2026-11-01T10:00:00.000000Z"),
        _run("run-newer", "2026-11-02T10:00:00.000000Z"),
    )

    found = _reusable(runs, MemoryStore())

    assert found is not None and found.run_id == "run-newer"


def test_runs_of_someone_else_of_another_model_or_unfinished_are_passed_over() -> None:
    other_model = BASE.model_copy(update={"model_id": "other-7b"})
    runs = MemoryRuns(
        _run("run-bobs", "2026-11-04T10:00:00.000000Z", owner="bob"),
        _run("run-other-model", "2026-11-03T10:00:00.000000Z", live_model=other_model),
        _run("run-running", "2026-11-02T10:00:00.000000Z", status=RunStatus.RUNNING),
        _run("run-uploaded", "2026-11-02T09:00:00.000000Z", live_model=None),
        _run("run-mine", "2026-11-01T10:00:00.000000Z"),
    )

    found = _reusable(runs, MemoryStore())

    assert found is not None and found.run_id == "run-mine"


def test_a_run_restricted_to_cases_that_leave_out_held_out_ones_is_not_reused() -> None:
    store = MemoryStore()
    runs = MemoryRuns(
        _run(
            "run-narrow", "2026-11-02T10:00:00.000000Z", case_scope=_scope(store, "run-narrow", ["c1", "c2"])
        ),
        _run("run-wide", "2026-11-01T10:00:00.000000Z", case_scope=_scope(store, "run-wide", list(HELD_OUT))),
    )

    found = _reusable(runs, store)

    assert found is not None and found.run_id == "run-wide"


def test_no_run_that_covers_the_held_out_cases_means_none_is_reused() -> None:
    runs = MemoryRuns(_run("run-other-version", "2026-11-01T10:00:00.000000Z", environment_version="v2"))

    assert _reusable(runs, MemoryStore()) is None


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"status": RunStatus.FAILED}, "it is Failed, not Completed"),
        (
            {"environment_version": "v2"},
            "it ran environment gsm8k-tr version v2, not the package's gsm8k-tr version v1",
        ),
        ({"files": {}}, "it has no per-case verdicts (no Scoring Output)"),
    ],
)
def test_a_run_that_cannot_be_the_base_run_is_refused_saying_why(fields: dict[str, Any], reason: str) -> None:
    run = _run("run-1", "2026-11-01T10:00:00.000000Z", **fields)

    with pytest.raises(BaseRunProblem) as refused:
        covers_held_out(run, TRAINING, HELD_OUT, store=MemoryStore())
    assert str(refused.value) == reason


def test_a_scope_missing_held_out_cases_is_refused_naming_them() -> None:
    store = MemoryStore()
    run = _run("run-1", "2026-11-01T10:00:00.000000Z", case_scope=_scope(store, "run-1", ["c2"]))

    with pytest.raises(BaseRunProblem) as refused:
        covers_held_out(run, TRAINING, HELD_OUT, store=store)
    assert str(refused.value) == "it was restricted to cases that leave out 2 held-out cases (c1, c3)"
