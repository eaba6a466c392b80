"""The DynamoDB repositories on moto: conditional writes, named transitions, newest-first pagination."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.aws.tables.datasets import DatasetsRepo
from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.aws.tables.runs import RunsRepo
from benchgen.outputs import RunOutput
from benchgen.ports.pages import InvalidNextToken
from benchgen.ports.runs import ShardReport
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus, ShardPlan
from benchgen.records.runs import (
    ArtifactStatus,
    InferenceProgress,
    RunConfig,
    RunRecord,
    RunStatus,
    ShardCounts,
)
from benchgen.settings import Settings
from tests.records import dataset


def _run(
    run_id: str, created_at: str, *, environment_id: str = "gsm8k", status: RunStatus = RunStatus.PENDING
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        environment_id=environment_id,
        environment_version="1",
        model="qwen",
        owner="user-a",
        status=status,
        created_at=created_at,
    )


def _stamp(minute: int) -> str:
    return f"2026-06-01T10:{minute:02d}:00.000000Z"


@pytest.fixture
def runs(aws: Settings) -> RunsRepo:
    return RunsRepo(aws.runs_table)


def _ids(records: list[RunRecord]) -> list[str]:
    return [record.run_id for record in records]


def test_creating_a_run_twice_keeps_the_first(runs: RunsRepo) -> None:
    # given a stored run
    assert runs.create(_run("r1", _stamp(1)))
    # when the same id is created again with another model
    second = _run("r1", _stamp(2)).model_copy(update={"model": "other"})
    # then the second create is refused and the first record is unchanged
    assert runs.create(second) is False
    stored = runs.get("r1")
    assert stored is not None and stored.model == "qwen"


def _start(runs: RunsRepo, run_id: str, **options: Any) -> RunRecord | None:
    return runs.start(
        run_id, submission_key=f"submissions/{run_id}/p.zip", submission_filename="p.zip", **options
    )


def test_a_duplicate_status_transition_changes_nothing(runs: RunsRepo) -> None:
    # given a pending run moved to Running once
    runs.create(_run("r1", _stamp(1)))
    assert _start(runs, "r1", started_at=_stamp(2))
    # when the same transition arrives again (a duplicate S3 event)
    again = _start(runs, "r1", started_at=_stamp(9))
    # then it is refused and the first start time stays
    assert again is None
    stored = runs.get("r1")
    assert stored is not None
    assert (stored.status, stored.started_at) == (RunStatus.RUNNING, _stamp(2))


def test_a_transition_accepts_any_of_several_expected_statuses(runs: RunsRepo) -> None:
    runs.create(_run("r1", _stamp(1), status=RunStatus.DEPLOYING))
    assert _start(runs, "r1", expected={RunStatus.PENDING, RunStatus.DEPLOYING})
    stored = runs.get("r1")
    assert stored is not None and stored.status == RunStatus.RUNNING


def test_a_transition_answers_the_run_as_its_write_left_it(runs: RunsRepo) -> None:
    # given a pending run
    runs.create(_run("r1", _stamp(1)))

    # when it starts, and then records what ingest counted (removing nothing it did not name)
    started = _start(runs, "r1", started_at=_stamp(2))
    recorded = runs.record_ingest("r1", counts={"total_questions": 3}, warnings=[], shards=None)
    filed = runs.add_files("r1", {RunOutput.SUBMISSION: "submissions/r1/p.zip"})

    # then each answer is the stored run at that moment: the step needs not read it again
    assert started is not None and (started.status, started.started_at) == (RunStatus.RUNNING, _stamp(2))
    assert recorded is not None and recorded.counts == {"total_questions": 3}
    assert filed == runs.get("r1")
    assert filed is not None and (filed.started_at, filed.counts) == (_stamp(2), {"total_questions": 3})


def test_a_transition_of_an_unknown_run_creates_nothing(runs: RunsRepo) -> None:
    assert runs.fail("missing", "boom", expected=RunStatus.PENDING) is None
    assert runs.get("missing") is None


def test_completing_a_run_lets_its_claim_go_and_awaits_its_artifact(runs: RunsRepo) -> None:
    # given a running run that a step holds
    runs.create(_run("r1", _stamp(1), status=RunStatus.RUNNING))
    assert _claim(runs, "first") == 1
    # when it completes
    assert runs.complete(
        "r1",
        overall_score=0.5,
        metrics={"accuracy": 0.5},
        other_metrics={},
        breakdowns={},
        counts={"total": 2, "passed": 1},
        execution_name="run-r1",
    )
    # then it holds its scores, no claim, and an artifact to build; a second completion changes nothing
    stored = runs.get("r1")
    assert stored is not None
    assert (stored.status, stored.overall_score, stored.counts) == (
        RunStatus.COMPLETED,
        0.5,
        {"total": 2, "passed": 1},
    )
    assert (stored.claim, stored.artifact_status, stored.execution_name) == (
        None,
        ArtifactStatus.PENDING,
        "run-r1",
    )
    assert runs.fail("r1", "late") is None


def test_recording_ingest_without_shards_removes_a_stale_plan(runs: RunsRepo) -> None:
    runs.create(
        _run("r1", _stamp(1), status=RunStatus.RUNNING).model_copy(
            update={"shards": ShardPlan(task=0, cases=4, size=2, count=2)}
        )
    )
    assert runs.record_ingest("r1", counts={"total_questions": 3}, warnings=["1 unknown id"], shards=None)
    stored = runs.get("r1")
    assert stored is not None
    assert (stored.shards, stored.counts, stored.warnings) == (None, {"total_questions": 3}, ["1 unknown id"])


def _claim(
    runs: RunsRepo, holder: str, *, step: str = "score", expires_at: float = 200.0, now: float = 100.0
) -> int | None:
    run = runs.get("r1")
    assert run is not None
    return runs.claim(run, step=step, holder=holder, expires_at=expires_at, now=now, status=RunStatus.RUNNING)


def test_a_live_claim_keeps_other_invocations_out_until_it_lapses(runs: RunsRepo) -> None:
    # given a running run claimed for scoring until t=200 by an invocation that then died
    runs.create(_run("r1", _stamp(1), status=RunStatus.RUNNING))
    assert _claim(runs, "first") == 1

    # when another delivery comes before the deadline, and the retry after it
    before = _claim(runs, "second", now=150.0)
    after = _claim(runs, "retry", now=250.0, expires_at=400.0)

    # then only the retry after the lapse takes the run, as the step's second attempt
    assert (before, after) == (None, 2)
    stored = runs.get("r1")
    assert stored is not None and stored.claim is not None
    assert (stored.claim.holder, stored.claim.attempt) == ("retry", 2)


def test_the_next_step_takes_the_run_while_the_previous_step_still_holds_it(runs: RunsRepo) -> None:
    # given ingest's claim, still live (its upload triggered scoring before ingest returned)
    runs.create(_run("r1", _stamp(1), status=RunStatus.RUNNING))
    assert _claim(runs, "ingest-holder", step="ingest") == 1

    # when scoring claims the run, then ingest lets its claim go
    attempt = _claim(runs, "score-holder", now=150.0)
    released = runs.release_claim("r1", holder="ingest-holder")

    # then scoring holds it (first attempt), and ingest's release did not touch scoring's claim
    assert (attempt, released) == (1, False)
    stored = runs.get("r1")
    assert stored is not None and stored.claim is not None
    assert (stored.claim.step, stored.claim.holder, stored.claim.expires_at) == (
        "score",
        "score-holder",
        200.0,
    )


def test_a_released_claim_is_taken_again_as_the_next_attempt(runs: RunsRepo) -> None:
    # given a claim whose holder failed and let it go
    runs.create(_run("r1", _stamp(1), status=RunStatus.RUNNING))
    assert _claim(runs, "first") == 1
    assert runs.release_claim("r1", holder="first")

    # when the retry claims it, and the first holder tries to release it again
    attempt = _claim(runs, "retry")
    released_by_stranger = runs.release_claim("r1", holder="first")

    # then the retry holds it as attempt 2; a former holder cannot let it go
    assert attempt == 2 and released_by_stranger is False
    stored = runs.get("r1")
    assert stored is not None and stored.claim is not None
    assert (stored.claim.holder, stored.claim.attempt, stored.claim.expires_at) == ("retry", 2, 200.0)


@pytest.mark.parametrize("seen", [None, "first"], ids=["unclaimed when read", "claimed when read"])
def test_failing_a_run_as_its_claim_was_read_fails_it_only_if_nobody_took_it_since(
    runs: RunsRepo, seen: str | None
) -> None:
    # given a running run, read with no claim or with the first holder's, that the retry then took
    runs.create(_run("r1", _stamp(1), status=RunStatus.RUNNING))
    if seen is not None:
        assert _claim(runs, seen) == 1
    assert _claim(runs, "retry", now=250.0, expires_at=400.0) is not None

    # when it is failed on the condition of the claim as read, then on the claim it has now
    stale = runs.fail("r1", "dead", holder=seen)
    current = runs.fail("r1", "dead", holder="retry")

    # then the stale write changed nothing, and the current one failed the run
    assert stale is None
    assert current is not None and current.status is RunStatus.FAILED and current.claim is None


def test_a_run_that_is_not_running_cannot_be_claimed(runs: RunsRepo) -> None:
    runs.create(_run("r1", _stamp(1), status=RunStatus.COMPLETED))

    assert _claim(runs, "late") is None
    stored = runs.get("r1")
    assert stored is not None and stored.claim is None


def test_a_shards_progress_replaces_its_own_counts_and_a_stale_report_changes_nothing(
    runs: RunsRepo,
) -> None:
    # Given a Running run whose cases are planned, and its shard 0 reporting 2 asked, 1 answered
    assert runs.create(_run("r1", _stamp(1), status=RunStatus.RUNNING))
    assert runs.record_progress("r1", InferenceProgress(cases=5), expected=RunStatus.RUNNING)
    first = ShardCounts(asked=2, answered=1)
    assert runs.add_progress("r1", ShardReport(0, None, first))
    assert runs.add_progress("r1", ShardReport(1, None, ShardCounts(asked=2, answered=2)))

    # When shard 0 is retried, its new attempt reporting 1 asked over what the first one left
    retried = ShardCounts(asked=1)
    assert runs.add_progress("r1", ShardReport(0, first, retried, "2026-06-01T10:05:00Z"))
    # and the first attempt's late report, or a duplicate of the first report, comes in
    assert not runs.add_progress("r1", ShardReport(0, first, ShardCounts(asked=3)))
    assert not runs.add_progress("r1", ShardReport(0, None, first))

    # Then the progress is the sum of each shard's latest counts, and the stale reports changed nothing
    run = runs.get("r1")
    assert run is not None and run.progress is not None
    assert (run.progress.asked, run.progress.answered, run.progress.unanswered) == (3, 2, 0)
    assert run.progress.call_deadline == "2026-06-01T10:05:00Z"
    assert run.shard_progress == {"0": retried, "1": ShardCounts(asked=2, answered=2)}


def test_numbers_round_trip_with_their_values(runs: RunsRepo) -> None:
    # given a run with fractional metrics, nested breakdowns, counts and integer sampling settings
    record = _run("r1", _stamp(1)).model_copy(
        update={
            "overall_score": 0.725,
            "metrics": {"accuracy": 0.1, "exact_match": 1.0},
            "breakdowns": {"difficulty": {"easy": {"accuracy": 0.875, "total": 8.0}}},
            "counts": {"total": 40, "passed": 29},
            "run_config": RunConfig(sampling={"temperature": 0.7, "max_tokens": 512, "mode": "greedy"}),
        }
    )
    runs.create(record)
    # when it is read back
    stored = runs.get("r1")
    # then every number is the one written
    assert stored is not None
    assert stored.overall_score == 0.725
    assert stored.metrics == {"accuracy": 0.1, "exact_match": 1.0}
    assert stored.breakdowns == {"difficulty": {"easy": {"accuracy": 0.875, "total": 8.0}}}
    assert stored.counts == {"total": 40, "passed": 29}
    assert stored.run_config.sampling == {"temperature": 0.7, "max_tokens": 512, "mode": "greedy"}


def test_runs_of_an_environment_come_newest_first_in_pages(runs: RunsRepo) -> None:
    # given three runs of gsm8k and one of another environment
    for minute, run_id in ((1, "a"), (3, "c"), (2, "b")):
        runs.create(_run(run_id, _stamp(minute)))
    runs.create(_run("x", _stamp(4), environment_id="squad"))
    # when listed two at a time
    first = runs.list(environment_id="gsm8k", limit=2)
    second = runs.list(environment_id="gsm8k", limit=2, next_token=first.next_token)
    # then the pages hold c, b then a, and the last page has no token
    assert _ids(first.items) == ["c", "b"]
    assert first.next_token is not None
    assert _ids(second.items) == ["a"]
    assert second.next_token is None


def test_runs_filtered_by_environment_and_status(runs: RunsRepo) -> None:
    runs.create(_run("a", _stamp(1), status=RunStatus.COMPLETED))
    runs.create(_run("b", _stamp(2), status=RunStatus.FAILED))
    runs.create(_run("c", _stamp(3), status=RunStatus.COMPLETED))
    runs.create(_run("d", _stamp(4), status=RunStatus.COMPLETED, environment_id="squad"))
    page = runs.list(environment_id="gsm8k", status=RunStatus.COMPLETED, limit=10)
    assert _ids(page.items) == ["c", "a"]
    assert page.next_token is None


def test_runs_in_one_status_come_newest_first(runs: RunsRepo) -> None:
    runs.create(_run("a", _stamp(1), status=RunStatus.FAILED))
    runs.create(_run("b", _stamp(2), status=RunStatus.COMPLETED))
    runs.create(_run("c", _stamp(3), status=RunStatus.FAILED, environment_id="squad"))
    assert _ids(runs.list(status=RunStatus.FAILED).items) == ["c", "a"]


def test_unfiltered_runs_merge_every_status_newest_first(runs: RunsRepo) -> None:
    # given runs spread over four statuses
    statuses = [
        RunStatus.COMPLETED,
        RunStatus.PENDING,
        RunStatus.FAILED,
        RunStatus.RUNNING,
        RunStatus.COMPLETED,
    ]
    for minute, status in enumerate(statuses):
        runs.create(_run(f"r{minute}", _stamp(minute), status=status))
    # when all runs are listed two at a time
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = runs.list(limit=2, next_token=token)
        seen.extend(_ids(page.items))
        pages += 1
        token = page.next_token
        if token is None:
            break
    # then every run appears once, newest first, over three pages
    assert seen == ["r4", "r3", "r2", "r1", "r0"]
    assert pages == 3


def test_runs_created_in_the_same_microsecond_are_neither_lost_nor_repeated(runs: RunsRepo) -> None:
    for run_id in ("a", "b", "c", "d"):
        runs.create(_run(run_id, _stamp(1)))
    first = runs.list(environment_id="gsm8k", limit=3)
    second = runs.list(environment_id="gsm8k", limit=3, next_token=first.next_token)
    assert _ids(first.items) + _ids(second.items) == ["d", "c", "b", "a"]


def test_a_mangled_token_is_refused(runs: RunsRepo) -> None:
    with pytest.raises(InvalidNextToken, match="next_token"):
        runs.list(next_token="not-a-token!")


def test_a_token_from_another_listing_is_refused(aws: Settings, runs: RunsRepo) -> None:
    # given a token from the environments listing
    environments = EnvironmentsRepo(aws.environments_table)
    for version in ("1", "2"):
        environments.put_if_absent(_environment("gsm8k", version, _stamp(1)))
    token = environments.list(limit=1).next_token
    assert token is not None
    # when it is used to list runs, then it is refused
    with pytest.raises(InvalidNextToken):
        runs.list(next_token=token)


def _environment(
    environment_id: str,
    version: str,
    created_at: str,
    status: EnvironmentStatus = EnvironmentStatus.REGISTERED,
) -> EnvironmentRecord:
    return EnvironmentRecord(
        environment_id=environment_id,
        version=version,
        status=status,
        title="GSM8K",
        bundle_key=f"environments/{environment_id}/{version}/bundle.zip",
        columns=[{"title": "Accuracy", "key": "accuracy", "index": 0}],
        created_at=created_at,
    )


def test_an_environment_version_is_recorded_once(aws: Settings) -> None:
    environments = EnvironmentsRepo(aws.environments_table)
    assert environments.put_if_absent(_environment("gsm8k", "1", _stamp(1)))
    assert environments.put_if_absent(_environment("gsm8k", "1", _stamp(2))) is False
    stored = environments.get("gsm8k", "1")
    assert stored is not None and stored.created_at == _stamp(1)
    assert stored.columns == [{"title": "Accuracy", "key": "accuracy", "index": 0}]


def test_the_latest_environment_version_is_the_last_registered(aws: Settings) -> None:
    # given versions "9" then "10" (which sorts first as text) and a rejected "11"
    environments = EnvironmentsRepo(aws.environments_table)
    environments.put_if_absent(_environment("gsm8k", "9", _stamp(1)))
    environments.put_if_absent(_environment("gsm8k", "10", _stamp(2)))
    environments.put_if_absent(_environment("gsm8k", "11", _stamp(3), EnvironmentStatus.REJECTED))
    # then the latest is "11", and the latest registered one is "10"
    latest = environments.latest("gsm8k")
    registered = environments.latest("gsm8k", status=EnvironmentStatus.REGISTERED)
    assert latest is not None and latest.version == "11"
    assert registered is not None and registered.version == "10"
    assert environments.latest("unknown") is None


def test_environments_list_in_pages(aws: Settings) -> None:
    environments = EnvironmentsRepo(aws.environments_table)
    for environment_id, version in (("gsm8k", "1"), ("gsm8k", "2"), ("squad", "1")):
        environments.put_if_absent(_environment(environment_id, version, _stamp(1)))
    seen: list[tuple[str, str]] = []
    token = None
    while True:
        page = environments.list(limit=2, next_token=token)
        seen.extend((record.environment_id, record.version) for record in page.items)
        token = page.next_token
        if token is None:
            break
    assert sorted(seen) == [("gsm8k", "1"), ("gsm8k", "2"), ("squad", "1")]


def test_a_dataset_is_saved_once(aws: Settings) -> None:
    datasets = DatasetsRepo(aws.datasets_table)
    assert datasets.put_if_absent(dataset("r1", _stamp(1)))
    assert datasets.put_if_absent(dataset("r1", _stamp(2))) is False
    stored = datasets.get("ds-r1")
    assert stored is not None and stored.created_at == _stamp(1)


def test_datasets_list_newest_first_by_kind(aws: Settings) -> None:
    # given two finetune datasets and one of another kind
    datasets = DatasetsRepo(aws.datasets_table, kinds=("finetune", "preference"))
    datasets.put_if_absent(dataset("r1", _stamp(1)))
    datasets.put_if_absent(dataset("r2", _stamp(3)))
    datasets.put_if_absent(dataset("r3", _stamp(2), kind="preference"))
    # then the kind filter keeps the finetune ones, newest first, and no filter merges all kinds
    finetune = datasets.list(kind="finetune")
    everything = datasets.list(limit=2)
    rest = datasets.list(limit=2, next_token=everything.next_token)
    assert [d.dataset_id for d in finetune.items] == ["ds-r2", "ds-r1"]
    assert [d.dataset_id for d in everything.items + rest.items] == ["ds-r2", "ds-r3", "ds-r1"]
    assert rest.next_token is None
