"""The preparation's Generate and Check tasks over in-memory ports: the examples and held-out cases
written, a spec that cannot be prepared refused with a sentence, coverage.json written and the preparation
recorded Ready, a held-out leak refused, and the pipeline's failure recorded, each only while Generating."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchgen.finetune.seed import Source
from benchgen.finetune.split import Split, in_test_bucket
from benchgen.records.bounds import MAX_ITEMS
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.steps.prepare import (
    BundleRef,
    CheckInput,
    GenerateInput,
    Generation,
    HeldOutLeak,
    PreparationNotGenerating,
    RunRef,
    check_preparation,
    generate_preparation,
    record_preparation_failure,
)
from benchgen.training.examples import HeldOutCase, Kind, PreparedExample, SourceContext, text_hash
from benchgen.training.preparation import GenerationReport
from benchgen.vocabulary import Method
from examplegen.writing import write_bundle_zip
from tests.fakes import MemoryPreparations, MemoryStore
from tests.unit.finetune_inputs import forty_wrong_of_fifty, make_env, scoring_output
from tests.unit.preparation_inputs import make_spec

BUNDLE_KEY = "environments/gsm8k/1/bundle.zip"
EXAMPLES_KEY = "preparations/prep-1/examples.jsonl"
HELD_OUT_KEY = "preparations/prep-1/held_out.jsonl"


def _judged(root: Path) -> MemoryStore:
    """The bucket of a registered gsm8k version and one run of it that got 40 of its 50 cases wrong."""
    make_env(root / "env", finetune={})
    bundle = write_bundle_zip(root / "env" / "bundle", root / "bundle.zip")
    output = scoring_output(root / "scoring_output.zip", forty_wrong_of_fifty())
    return MemoryStore(
        {BUNDLE_KEY: bundle.read_bytes(), "runs/run-1/scoring_output.zip": output.read_bytes()}
    )


def _generate(store: MemoryStore, workdir: Path, **spec: Any) -> Generation:
    task = GenerateInput(
        preparation_id="prep-1",
        spec=make_spec(**spec),
        runs=[
            RunRef(run_id="run-1", model="Qwen2.5-7B-LoRA", environment_id="gsm8k", environment_version="1")
        ],
        bundle=BundleRef(key=BUNDLE_KEY),
    )
    return generate_preparation(task, store=store, workdir=workdir)


def test_generate_writes_the_examples_and_held_out_cases_and_reports_them(tmp_path: Path) -> None:
    store = _judged(tmp_path)

    generation = _generate(store, tmp_path / "generate")

    # then both files are in the bucket, and the report counts what they hold
    report = generation.report
    assert generation.refused is None and report is not None
    examples = [json.loads(line) for line in store.objects[EXAMPLES_KEY].splitlines()]
    held_out = [json.loads(line)["case_id"] for line in store.objects[HELD_OUT_KEY].splitlines()]
    assert report.example_count == len(examples) == sum(report.kinds.values())
    assert report.source_cases == 40
    assert held_out == sorted(f"gsm-{i:03d}" for i in range(50) if in_test_bucket(f"gsm-{i:03d}"))
    assert report.held_out_count == len(held_out)
    assert generation.scope == ["arithmetic"]


def test_generating_again_gives_the_same_files_and_state(tmp_path: Path) -> None:
    store = _judged(tmp_path)
    first = _generate(store, tmp_path / "first")
    files = {key: store.objects[key] for key in (EXAMPLES_KEY, HELD_OUT_KEY)}

    second = _generate(store, tmp_path / "second")

    assert second == first
    assert {key: store.objects[key] for key in files} == files


def test_a_spec_naming_a_run_that_was_not_judged_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    store = _judged(tmp_path)

    generation = _generate(store, tmp_path / "generate", run_ids=["run-2"])

    assert generation == Generation(refused="no run run-2: check run_ids (GET /runs lists runs)")
    assert store.uploads == []


REPORT = GenerationReport(
    example_count=2,
    kinds={"seed": 2},
    splits={"train": 1, "validation": 0, "test": 1},
    source_cases=2,
    held_out_count=1,
    dropped={f"reason {n}": n for n in range(80)},
    base_model="m",
    suggested_hyperparams={"learning_rate": 0.0002, "method": "sft"},
    state_hash="ab" * 32,
)


def _generating(status: PreparationStatus = PreparationStatus.GENERATING) -> MemoryPreparations:
    return MemoryPreparations(
        PreparationRecord(
            preparation_id="p1",
            owner="o",
            status=status,
            environment_id="e",
            environment_version="v1",
            method=Method.DEMONSTRATION,
            selection="wrong_plus_augmented",
            run_ids=["r1"],
            base_model="m",
            examples_key="preparations/p1/examples.jsonl",
            held_out_key="preparations/p1/held_out.jsonl",
            coverage_key="preparations/p1/coverage.json",
        )
    )


def _task() -> CheckInput:
    return CheckInput(preparation_id="p1", scope=["final-answer"], report=REPORT)


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
    preparations = _generating()
    answer = check_preparation(_task(), store=store, preparations=preparations, workdir=tmp_path)
    written = json.loads(store.objects["preparations/p1/coverage.json"])
    assert written["splits"] == {"train": 1, "validation": 0, "test": 1}
    assert written["criteria"] == {"final-answer": {"train": 1, "validation": 0, "test": 1}}
    assert answer.gap_count == len(written["gaps"])
    # the preparation is Ready with what Generate found, bounded as its record is, and the gap count
    ready = preparations.get("p1")
    assert ready is not None and ready.status is PreparationStatus.READY
    assert (ready.state_hash, ready.example_count, ready.gap_count) == (
        REPORT.state_hash,
        2,
        answer.gap_count,
    )
    assert (ready.splits, ready.suggested_hyperparams) == (REPORT.splits, REPORT.suggested_hyperparams)
    assert len(ready.dropped) == MAX_ITEMS and ready.finished_at is not None


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
        check_preparation(_task(), store=store, preparations=_generating(), workdir=tmp_path)
    assert "preparations/p1/coverage.json" not in store.objects


def test_a_preparation_that_left_generating_is_not_recorded_again(tmp_path: Path) -> None:
    store = _store([_example("c1", Split.TRAIN, "What is 2 + 2?")], [])
    preparations = _generating(PreparationStatus.FAILED)
    before = preparations.get("p1")

    with pytest.raises(PreparationNotGenerating, match="preparation p1 is no longer Generating"):
        check_preparation(_task(), store=store, preparations=preparations, workdir=tmp_path)
    with pytest.raises(PreparationNotGenerating):
        record_preparation_failure("p1", "late", preparations=preparations)

    assert preparations.get("p1") == before


def test_a_caught_failure_is_recorded_on_the_preparation() -> None:
    preparations = _generating()

    record_preparation_failure("p1", "Generate ran out of time", preparations=preparations)

    failed = preparations.get("p1")
    assert failed is not None
    assert (failed.status, failed.failure_reason) == (PreparationStatus.FAILED, "Generate ran out of time")
    assert failed.finished_at is not None
