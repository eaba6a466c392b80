"""What ``/preparations`` does, on the in-memory fakes: a preparation is checked against the caller's own
completed, judged runs, recorded Generating and its state machine started once; it is its owner's alone."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.bundle.spec import SelectionCriterion
from benchgen.outputs import RunOutput
from benchgen.ports.pages import InvalidNextToken
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.requests.errors import Conflict, Forbidden, NotFound
from benchgen.requests.preparations import (
    InvalidPreparation,
    create_preparation,
    examples_page,
    list_preparations,
    preparation_coverage,
    preparation_detail,
)
from benchgen.training.preparation import PreparationSpec
from benchgen.vocabulary import Method
from tests.api_services import Events, memory_services
from tests.fakes import MemoryEnvironments, MemoryPreparations, MemoryRuns, MemoryStarter

# Answered outside Lambda, a create request has no deadline to hold its Idempotency-Key until, as powertools
# warns: the key is held for the whole window instead.
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left:UserWarning")

ENVIRONMENT = EnvironmentRecord(
    environment_id="gsm8k",
    version="1",
    status=EnvironmentStatus.REGISTERED,
    title="GSM8K",
    bundle_key="environments/gsm8k/1/bundle.zip",
    bundle_version_id="v7",
    criteria=["accuracy"],
)


def _run(run_id: str, *, owner: str = "alice", **fields: Any) -> RunRecord:
    values: dict[str, Any] = {
        "run_id": run_id,
        "environment_id": "gsm8k",
        "environment_version": "1",
        "model": "example-base",
        "owner": owner,
        "status": RunStatus.COMPLETED,
        "files": {RunOutput.SCORING_OUTPUT: f"runs/{run_id}/scoring_output.zip"},
    }
    return RunRecord.model_validate(values | fields)


def _spec(*run_ids: str, **fields: Any) -> PreparationSpec:
    values = {"environment_id": "gsm8k", "environment_version": "1", "method": Method.DEMONSTRATION}
    return PreparationSpec.model_validate(values | {"run_ids": list(run_ids or ("r1",))} | fields)


def _preparation(preparation_id: str, *, owner: str = "alice", **fields: Any) -> PreparationRecord:
    values: dict[str, Any] = {
        "preparation_id": preparation_id,
        "owner": owner,
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": Method.DEMONSTRATION,
        "selection": SelectionCriterion.ALL_ITEMS,
        "run_ids": ["r1"],
        "base_model": "example-base",
        "examples_key": f"preparations/{preparation_id}/examples.jsonl",
        "held_out_key": f"preparations/{preparation_id}/held_out.jsonl",
        "coverage_key": f"preparations/{preparation_id}/coverage.json",
    }
    return PreparationRecord.model_validate(values | fields)


class World:
    """A registered environment version, alice's and bob's runs on it, and the preparations made."""

    def __init__(self, *runs: RunRecord, starter: MemoryStarter | None = None) -> None:
        self.preparations = MemoryPreparations()
        self.starter = starter or MemoryStarter()
        self.events = Events()
        self.services = memory_services(
            runs=MemoryRuns(*(runs or (_run("r1"),))),
            environments=MemoryEnvironments(ENVIRONMENT),
            preparations=self.preparations,
            starter=self.starter,
            events=self.events,
        )


def test_a_preparation_is_recorded_generating_and_its_state_machine_started_with_its_runs_and_bundle() -> (
    None
):
    world = World()

    created = create_preparation(_spec(), owner="alice", services=world.services)

    assert (created.status, created.benchmark, created.base_model) == (
        PreparationStatus.GENERATING,
        "GSM8K",
        "example-base",
    )
    task = world.starter.started[created.preparation_id]
    assert task["runs"] == [
        {"run_id": "r1", "model": "example-base", "environment_id": "gsm8k", "environment_version": "1"}
    ]
    assert task["bundle"] == {"key": "environments/gsm8k/1/bundle.zip", "version_id": "v7"}
    assert world.events == ["PreparationCreated"]


def test_someone_elses_run_is_refused_by_name_before_anything_else_is_checked() -> None:
    world = World(_run("r1"), _run("r2", owner="bob", status=RunStatus.RUNNING))

    with pytest.raises(Forbidden) as refused:
        create_preparation(_spec("r1", "r2"), owner="alice", services=world.services)

    assert str(refused.value) == "runs r2 are not yours: a preparation draws only from your own runs"


def test_a_run_that_is_not_completed_is_refused_with_its_status() -> None:
    world = World(_run("r1", status=RunStatus.RUNNING))

    with pytest.raises(Conflict) as refused:
        create_preparation(_spec(), owner="alice", services=world.services)

    assert str(refused.value) == "runs r1 (Running) are not Completed: wait until they are, or leave them out"


def test_a_run_without_verdicts_is_refused() -> None:
    world = World(_run("r1", files={}))

    with pytest.raises(Conflict) as refused:
        create_preparation(_spec(), owner="alice", services=world.services)

    assert str(refused.value) == (
        "runs r1 have no scoring output (per-case verdicts) to draw from: leave them out"
    )


def test_a_run_that_does_not_exist_is_not_found_by_name() -> None:
    with pytest.raises(NotFound) as refused:
        create_preparation(_spec("r1", "r9"), owner="alice", services=World().services)

    assert str(refused.value) == "no run r9: check run_ids (GET /runs lists runs)"


def test_a_run_named_twice_is_refused() -> None:
    with pytest.raises(InvalidPreparation) as refused:
        create_preparation(_spec("r1", "r1"), owner="alice", services=World().services)

    assert str(refused.value) == "run_ids names r1 more than once: list each run once"


def test_an_unknown_criterion_is_refused_naming_the_valid_ids() -> None:
    with pytest.raises(InvalidPreparation) as refused:
        create_preparation(_spec(criteria=["style"]), owner="alice", services=World().services)

    assert (
        str(refused.value) == "criteria style are not criteria of gsm8k version 1; the valid ids are accuracy"
    )


def test_a_preparation_that_cannot_start_is_failed_saying_to_create_it_again() -> None:
    world = World(starter=MemoryStarter(down=ConnectionError("unreachable")))

    with pytest.raises(ConnectionError):
        create_preparation(_spec(), owner="alice", services=world.services)

    (record,) = world.preparations.records.values()
    assert (record.status, record.failure_reason) == (
        PreparationStatus.FAILED,
        "the preparation could not be started: create it again",
    )


def test_a_retry_with_the_same_idempotency_key_gives_one_preparation() -> None:
    world = World()

    first = create_preparation(_spec(), owner="alice", services=world.services, idempotency_key="k1")
    again = create_preparation(_spec(), owner="alice", services=world.services, idempotency_key="k1")

    assert again == first
    assert list(world.preparations.records) == [first.preparation_id]


def test_a_preparation_is_its_owners_alone() -> None:
    services = memory_services(preparations=MemoryPreparations(_preparation("prep-1")))

    with pytest.raises(Forbidden, match="only the preparation's owner can read it"):
        preparation_detail("prep-1", owner="bob", services=services)


def test_the_owners_list_is_newest_first_and_paged() -> None:
    preparations = MemoryPreparations(
        _preparation("prep-1", created_at="2026-01-01T00:00:00Z"),
        _preparation("prep-2", created_at="2026-01-02T00:00:00Z"),
        _preparation("prep-3", owner="bob"),
    )
    services = memory_services(preparations=preparations)

    first = list_preparations(owner="alice", services=services, limit=1, next_token=None)
    rest = list_preparations(owner="alice", services=services, limit=1, next_token=first.next_token)

    assert [item.preparation_id for item in first.items + rest.items] == ["prep-2", "prep-1"]
    assert rest.next_token is None


def test_a_preparation_still_generating_has_no_examples_yet() -> None:
    services = memory_services(preparations=MemoryPreparations(_preparation("prep-1")))

    with pytest.raises(Conflict) as refused:
        examples_page(
            "prep-1",
            owner="alice",
            services=services,
            split=None,
            criterion=None,
            kind=None,
            limit=20,
            next_token=None,
        )

    assert str(refused.value) == "preparation prep-1 is still Generating: read it again in a moment"


def test_a_next_token_that_holds_no_offset_is_refused() -> None:
    ready = _preparation("prep-1", status=PreparationStatus.READY)
    services = memory_services(preparations=MemoryPreparations(ready))

    with pytest.raises(InvalidNextToken):
        examples_page(
            "prep-1",
            owner="alice",
            services=services,
            split=None,
            criterion=None,
            kind=None,
            limit=20,
            next_token="bm90LWFuLW9mZnNldA",
        )


def test_a_ready_preparation_whose_coverage_report_is_gone_says_to_create_it_again() -> None:
    ready = _preparation("prep-1", status=PreparationStatus.READY)
    services = memory_services(preparations=MemoryPreparations(ready))

    with pytest.raises(Conflict) as refused:
        preparation_coverage("prep-1", owner="alice", services=services)

    assert str(refused.value) == (
        "preparation prep-1 has lost its coverage report: create the preparation again"
    )
