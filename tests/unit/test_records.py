"""The bounds every run and environment record keeps, whatever its users send (a DynamoDB item is 400 KB)."""

from __future__ import annotations

from benchgen.records.bounds import MAX_ITEMS
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import RunRecord


def _run(**fields: object) -> RunRecord:
    return RunRecord.model_validate(
        {"run_id": "r1", "environment_id": "e", "environment_version": "v1", "model": "m", "owner": "o"}
        | fields
    )


def test_a_long_reason_keeps_its_start_and_says_how_much_was_cut() -> None:
    run = _run(failure_reason="the scoring program exited with code 1:\n" + "x" * 10_000)

    assert run.failure_reason is not None and len(run.failure_reason) == 2000
    assert run.failure_reason.startswith("the scoring program exited with code 1:\nxxx")
    assert run.failure_reason.endswith(" ... [8040 more characters cut]")


def test_many_warnings_keep_the_first_ones_and_count_the_rest() -> None:
    run = _run(warnings=[f"warning {number}" for number in range(500)])

    assert len(run.warnings) == MAX_ITEMS
    assert run.warnings[:2] == ["warning 0", "warning 1"]
    assert run.warnings[-1] == "... and 451 more not shown"


def test_scores_and_breakdowns_keep_their_first_entries_with_short_keys() -> None:
    run = _run(
        other_metrics={f"score_{number}": 0.5 for number in range(1000)},
        breakdowns={"domain": {"d" * 1000: {"accuracy": 1.0}} | {f"g{n}": {"n": 1.0} for n in range(99)}},
    )

    assert list(run.other_metrics)[:2] == ["score_0", "score_1"] and len(run.other_metrics) == MAX_ITEMS
    groups = run.breakdowns["domain"]
    assert len(groups) == MAX_ITEMS
    assert max(len(group) for group in groups) == 200


def test_an_environment_keeps_a_bounded_list_of_problems() -> None:
    record = EnvironmentRecord(
        environment_id="e",
        version="v1",
        status=EnvironmentStatus.REJECTED,
        bundle_key="environments/e/v1/bundle.zip",
        problems=["p" * 5000] * 80,
    )

    assert len(record.problems) == MAX_ITEMS and len(record.problems[0]) == 2000
