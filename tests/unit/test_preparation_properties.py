"""Under any settings, no held-out case or its text reaches a train or validation row."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.environment import Environment
from benchgen.stored_numbers import SMALLEST_STORED_NUMBER
from benchgen.training.coverage import check_held_out
from benchgen.training.examples import text_hash
from benchgen.training.preparation import MAX_SEED, RunSource, generate
from tests.unit.finetune_inputs import case, make_env, verdict
from tests.unit.preparation_inputs import make_spec, read_examples, read_held_out, run_source

CASES = 40


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    env = make_env(
        tmp_path_factory.mktemp("env"),
        finetune={"pool": {"path": "pool.jsonl", "share": 0.5}},
        cases=CASES,
        pool_rows=1,
    )
    # Pool rows that try every way in: a case's id, a case's question, and plain rows of their own.
    rows = [
        {"id": case(i)["id"], "question": f"What is {i} + 2?", "answer": str(i + 2)}
        for i in range(0, CASES, 3)
    ]
    rows += [
        {"id": f"copy-{i}", "question": case(i)["question"], "answer": case(i)["answer"]}
        for i in range(CASES)
    ]
    rows += [{"id": f"p{i}", "question": f"What is {i} + 7?", "answer": str(i + 7)} for i in range(20)]
    (env.root / "pool.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return env


def _verdicts(outcome: int) -> list[dict[str, Any]]:
    """Every case judged, wrong, passed or a near miss by ``outcome``, and a twin of every case: an unknown
    case id asking the same question in other spacing."""
    judged = [
        verdict(i, passed=(i + outcome) % 3 != 0, near_miss=(i + outcome) % 5 == 0) for i in range(CASES)
    ]
    twins = [
        verdict(i, passed=False)
        | {"case_id": f"twin-{outcome}-{i}", "question": case(i)["question"].replace(" ", "  ")}
        for i in range(CASES)
    ]
    return judged + twins


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[RunSource]:
    root = tmp_path_factory.mktemp("runs")
    return [run_source(root, f"run-{n}", _verdicts(n)) for n in range(3)]


def _test_bucket(case_id: str, first_test_bucket: int) -> bool:
    # The documented rule, written out independently of the code under test.
    return int(hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:16], 16) % 100 >= first_test_bucket


@st.composite
def split_shares(draw: st.DrawFn) -> dict[str, int]:
    train = draw(st.integers(min_value=1, max_value=99))
    validation = draw(st.integers(min_value=0, max_value=99 - train))
    return {"train": train, "validation": validation, "test": 100 - train - validation}


@settings(max_examples=40, deadline=None)
@given(
    shares=split_shares(),
    factor=st.integers(min_value=0, max_value=6),
    # a share a record can store: 0, or at least DynamoDB's smallest magnitude
    pool_share=st.none() | st.just(0.0) | st.floats(min_value=SMALLEST_STORED_NUMBER, max_value=1.0),
    seed=st.integers(min_value=0, max_value=MAX_SEED),
    method=st.sampled_from(["demonstration", "preference"]),
    selection=st.sampled_from(["wrong_plus_augmented", "all_items", "failed_and_near_miss"]),
    run_ids=st.lists(st.sampled_from(["run-0", "run-1", "run-2"]), min_size=1, max_size=3, unique=True),
)
def test_no_held_out_case_or_text_reaches_train_or_validation(
    env: Environment,
    runs: list[RunSource],
    shares: dict[str, int],
    factor: int,
    pool_share: float | None,
    seed: int,
    method: str,
    selection: str,
    run_ids: list[str],
) -> None:
    spec = make_spec(
        method=method,
        selection=selection,
        run_ids=run_ids,
        settings={"augmentation_factor": factor, "pool_share": pool_share, "seed": seed, "splits": shares},
    )
    with tempfile.TemporaryDirectory() as tmp:
        generate(spec, env, [run for run in runs if run.run_id in run_ids], Path(tmp))
        examples = read_examples(Path(tmp))
        held = read_held_out(Path(tmp))
    # then held_out.jsonl lists exactly the environment's test-bucket cases, passed ones included
    first_test = shares["train"] + shares["validation"]
    expected = sorted(case(i)["id"] for i in range(CASES) if _test_bucket(case(i)["id"], first_test))
    assert [h.case_id for h in held] == expected
    assert [h.text_hash for h in held] == [text_hash(case(int(h.case_id[4:]))["question"]) for h in held]
    # and no train or validation row has a held-out case id, prompt text or source question text
    ids = {h.case_id for h in held}
    hashes = {h.text_hash for h in held}
    assert check_held_out(examples, held) == []
    for example in examples:
        if example.split.value != "test":
            assert example.source.case_id not in ids
            assert text_hash(example.prompt) not in hashes
            assert example.source_text_hash not in hashes
