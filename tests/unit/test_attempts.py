"""The last attempt of a run step that runs out of time fails the run and says so on the bus."""

from __future__ import annotations

import time

from benchgen.records.runs import RunRecord, RunStatus
from benchgen.steps.attempts import Invocation, out_of_time_guard
from tests.fakes import MemoryRuns, Published


def test_the_last_score_attempt_running_out_of_time_fails_the_run_and_publishes_run_failed() -> None:
    # given the only attempt of a score step whose deadline comes in 10.2 s (the guard fires 10 s before)
    runs = MemoryRuns(
        RunRecord(
            run_id="run-1",
            environment_id="e",
            environment_version="v1",
            model="m",
            owner="u",
            status="Running",
        )
    )
    published = Published()
    last = Invocation(request_id="req-slow", deadline=time.time() + 10.2, attempts=1)

    # when the step is still working at that moment
    with out_of_time_guard(
        runs,
        "run-1",
        step="score",
        attempt=1,
        invocation=last,
        publisher=published,
    ):
        time.sleep(1.0)

    # then the run failed saying it ran out of time, and RunFailed went out with the same reason
    run = runs.runs["run-1"]
    assert run.status is RunStatus.FAILED
    assert run.failure_reason is not None and run.failure_reason.startswith(
        "internal error while scoring the predictions (TimeoutError, attempt 1 of 1, request id req-slow)"
    )
    assert published == [("RunFailed", {"run_id": "run-1", "reason": run.failure_reason})]
