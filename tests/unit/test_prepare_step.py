"""The Check task over an in-memory bucket: coverage.json written, a held-out leak refused with a sentence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchgen.finetune.seed import Source
from benchgen.finetune.split import Split
from benchgen.steps.prepare import CheckTask, HeldOutLeak, check_preparation
from benchgen.training.examples import HeldOutCase, Kind, PreparedExample, SourceContext, text_hash
from tests.fakes import MemoryStore


def _example(case_id: str, split: Split, question: str) -> PreparedExample:
    return PreparedExample(
        example_id=f"{case_id}-0",
        split=split,
        kind=Kind.SEED,
        criteria=["final-answer"],
        prompt=question,
        chosen="4",
        source=SourceContext(case_id=case_id, run_id="r1", layer=Source.SEED),
        source_text_hash=text_hash(question),
    )


def _store(examples: list[PreparedExample], held_out: list[HeldOutCase]) -> MemoryStore:
    def lines(models: list[Any]) -> bytes:
        return b"".join(model.model_dump_json().encode() + b"\n" for model in models)

    return MemoryStore(
        {
            "preparations/p1/examples.jsonl": lines(examples),
            "preparations/p1/held_out.jsonl": lines(held_out),
        }
    )


def test_check_writes_coverage_and_answers_its_gap_count(tmp_path: Path) -> None:
    store = _store(
        [_example("c1", Split.TRAIN, "What is 2 + 2?"), _example("c2", Split.TEST, "What is 3 + 1?")],
        [HeldOutCase(case_id="c2", text_hash=text_hash("What is 3 + 1?"))],
    )
    answer = check_preparation(
        CheckTask(preparation_id="p1", scope=["final-answer"]),
        store=store,
        workdir=tmp_path,
    )
    written = json.loads(store.objects["preparations/p1/coverage.json"])
    assert written["splits"] == {"train": 1, "validation": 0, "test": 1}
    assert written["criteria"] == {"final-answer": {"train": 1, "validation": 0, "test": 1}}
    assert answer == {"gap_count": str(len(written["gaps"]))}


def test_a_training_row_from_a_held_out_case_fails_the_check_and_writes_nothing(tmp_path: Path) -> None:
    store = _store(
        [_example("c2", Split.TRAIN, "What is 3 + 1?")],
        [HeldOutCase(case_id="c2", text_hash=text_hash("What is 3 + 1?"))],
    )
    with pytest.raises(
        HeldOutLeak,
        match=r"^this is a defect in generation, report it with the preparation id: training rows come from "
        r"held-out cases \(train row 'c2-0' comes from held-out case 'c2'\)$",
    ):
        check_preparation(
            CheckTask(preparation_id="p1", scope=["final-answer"]),
            store=store,
            workdir=tmp_path,
        )
    assert "preparations/p1/coverage.json" not in store.objects
