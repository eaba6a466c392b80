"""A preparation's record: bounded like the others."""

from __future__ import annotations

from typing import Any

from benchgen.records.bounds import MAX_CRITERIA, MAX_ITEMS
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.preparations import PreparationRecord


def _preparation(**fields: Any) -> PreparationRecord:
    return PreparationRecord.model_validate(
        {
            "preparation_id": "p1",
            "owner": "o",
            "environment_id": "e",
            "environment_version": "v1",
            "method": "preference",
            "selection": "all_items",
            "run_ids": ["r1"],
            "base_model": "m",
            "examples_key": "preparations/p1/examples.jsonl",
            "held_out_key": "preparations/p1/held_out.jsonl",
            "coverage_key": "preparations/p1/coverage.json",
        }
        | fields
    )


def test_many_drop_reasons_and_hyperparameters_keep_their_first_entries_with_short_texts() -> None:
    prepared = _preparation(
        dropped={f"reason {n} " + "x" * 5000: n for n in range(80)},
        suggested_hyperparams={f"h{n}": n for n in range(80)},
    )
    assert len(prepared.dropped) == len(prepared.suggested_hyperparams) == MAX_ITEMS
    assert max(len(reason) for reason in prepared.dropped) == 2000
    assert list(prepared.suggested_hyperparams)[:2] == ["h0", "h1"]


def test_an_environment_records_all_its_criteria_or_none_never_a_cut_list() -> None:
    def environment(criteria: list[str]) -> EnvironmentRecord:
        return EnvironmentRecord(
            environment_id="e",
            version="v1",
            status=EnvironmentStatus.REGISTERED,
            bundle_key="environments/e/v1/bundle.zip",
            criteria=criteria,
        )

    assert environment(["a", "b"]).criteria == ["a", "b"]
    assert environment([f"c{n}" for n in range(MAX_CRITERIA + 1)]).criteria is None
