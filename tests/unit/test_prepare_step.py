"""The preparation's Generate and Check tasks over an in-memory bucket: the examples and held-out cases
written, a spec that cannot be prepared refused with a sentence, coverage.json written, a held-out leak
refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchgen.finetune.seed import Source
from benchgen.finetune.split import Split, in_test_bucket
from benchgen.steps.prepare import (
    BundleRef,
    CheckTask,
    GenerateTask,
    Generation,
    HeldOutLeak,
    RunRef,
    check_preparation,
    generate_preparation,
)
from benchgen.training.examples import HeldOutCase, Kind, PreparedExample, SourceContext, text_hash
from examplegen.writing import write_bundle_zip
from tests.fakes import MemoryStore
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
    task = GenerateTask(
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

    assert generation == Generation(
        refused="no scored run was found for 'run-2'; name runs that finished scoring"
    )
    assert store.uploads == []


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
    checked = check_preparation(
        CheckTask(preparation_id="p1", scope=["final-answer"]),
        store=store,
        workdir=tmp_path,
    )
    written = json.loads(store.objects["preparations/p1/coverage.json"])
    assert written["splits"] == {"train": 1, "validation": 0, "test": 1}
    assert written["criteria"] == {"final-answer": {"train": 1, "validation": 0, "test": 1}}
    assert checked.gap_count == len(written["gaps"])


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
