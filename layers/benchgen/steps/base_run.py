"""Which existing run may stand for the base model in an evaluation.

A base run is reused only when its verdicts cover every held-out case of the package, judged on the same
environment version: then pairing it with the trained model's run loses no case and mixes no benchmarks.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchgen.errors import BenchGenError
from benchgen.outputs import RunOutput
from benchgen.ports.runs import RunLister
from benchgen.ports.storage import ObjectStorage
from benchgen.records.runs import LiveModel, RunRecord, RunStatus
from benchgen.records.training_runs import TrainingRunRecord
from benchgen.steps.case_scope import read_case_scope

# Completed runs of the environment looked through for a reusable one, newest first.
SEARCH_PAGES = 4
PAGE_SIZE = 50
MAX_NAMED = 5


class BaseRunProblem(BenchGenError):
    """Why a run cannot be an evaluation's base run."""


def covers_held_out(
    run: RunRecord, training: TrainingRunRecord, held_out: tuple[str, ...], *, store: ObjectStorage
) -> None:
    """Raise BaseRunProblem unless ``run`` judged every held-out case, on the training's environment
    version."""
    if run.status is not RunStatus.COMPLETED:
        raise BaseRunProblem(f"it is {run.status.value}, not Completed")
    same = (run.environment_id, run.environment_version) == (
        training.environment_id,
        training.environment_version,
    )
    if not same:
        raise BaseRunProblem(
            f"it ran environment {run.environment_id} version {run.environment_version}, not the package's "
            f"{training.environment_id} version {training.environment_version}"
        )
    if RunOutput.SCORING_OUTPUT not in run.files:
        raise BaseRunProblem(f"it has no per-case verdicts (no {RunOutput.SCORING_OUTPUT.label})")
    if run.case_scope is None:
        return  # it judged every case of the version, the held-out ones among them
    with tempfile.TemporaryDirectory() as workdir:
        scoped = read_case_scope(run.case_scope, store=store, workdir=Path(workdir))
    missing = [case_id for case_id in held_out if case_id not in scoped]
    if missing:
        named = ", ".join(missing[:MAX_NAMED]) + (" ..." if len(missing) > MAX_NAMED else "")
        raise BaseRunProblem(
            f"it was restricted to cases that leave out {len(missing)} held-out cases ({named})"
        )


def reusable_base_run(
    runs: RunLister,
    training: TrainingRunRecord,
    base: LiveModel,
    held_out: tuple[str, ...],
    *,
    owner: str,
    store: ObjectStorage,
) -> RunRecord | None:
    """The owner's newest Completed live run of ``base`` (same connection and model id) that covers the
    held-out cases; None when the newest few hundred runs of the environment hold none."""
    token: str | None = None
    for _ in range(SEARCH_PAGES):
        page = runs.list(
            environment_id=training.environment_id,
            status=RunStatus.COMPLETED,
            limit=PAGE_SIZE,
            next_token=token,
        )
        for run in page.items:
            live = run.live_model
            if run.owner != owner or live is None:
                continue
            if (live.connection_id, live.model_id) != (base.connection_id, base.model_id):
                continue
            try:
                covers_held_out(run, training, held_out, store=store)
            except BaseRunProblem:
                continue
            return run
        token = page.next_token
        if token is None:
            break
    return None
