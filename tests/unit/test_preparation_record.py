"""A preparation's record: bounded like the others, and what the state machine writes into it."""

from __future__ import annotations

from typing import Any

import pytest

from benchgen.records import MAX_CRITERIA, MAX_ITEMS, EnvironmentRecord, EnvironmentStatus, PreparationRecord
from benchgen.steps.preparation_record import record_values


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


def _found(**changes: Any) -> dict[str, Any]:
    return {
        "state_hash": "ab" * 32,
        "example_count": 12,
        "source_cases": 3,
        "held_out_count": 2,
        "splits": {"train": 10, "validation": 1, "test": 1},
        "kinds": {"seed": 3, "augmented": 9},
        "dropped": {"the pool row repeats a held-out question": 2},
        "suggested_hyperparams": {"learning_rate": 0.0002, "epochs": 2, "method": "sft"},
    } | changes


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


def test_record_values_are_in_the_form_their_attributes_take() -> None:
    values = record_values(_found())
    assert values["state_hash"] == "ab" * 32
    assert (values["example_count"], values["source_cases"], values["held_out_count"]) == ("12", "3", "2")
    assert values["splits"] == {"train": {"N": "10"}, "validation": {"N": "1"}, "test": {"N": "1"}}
    assert values["suggested_hyperparams"] == {
        "learning_rate": {"N": "0.0002"},
        "epochs": {"N": "2"},
        "method": {"S": "sft"},
    }


def test_record_values_are_bounded_as_the_record_is() -> None:
    values = record_values(_found(dropped={f"reason {n}": n for n in range(80)}))
    assert len(values["dropped"]) == MAX_ITEMS


def test_record_values_name_what_is_missing() -> None:
    found = _found()
    del found["kinds"]
    with pytest.raises(ValueError, match="Record needs exactly"):
        record_values(found)
