"""Packages of generated preparations: under any generation settings, what the preparation holds out stays
out of the training files, and packaging refuses nothing but a preparation with no train row at all."""

from __future__ import annotations

import json
import re
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.environment import Environment
from benchgen.finetune.split import SplitShares
from benchgen.training.examples import text_hash
from benchgen.training.held_out import case_questions
from benchgen.training.package import PackageRefused, PreparationInfo, build_package
from benchgen.training.preparation import RunSource, generate
from benchgen.vocabulary import Method
from tests.unit.finetune_inputs import case, forty_wrong_of_fifty, make_env
from tests.unit.preparation_inputs import make_spec, read_held_out, run_source

CASES = 50
FINETUNE = {"augmentation": {"factor": 3}, "pool": {"path": "pool.jsonl", "share": 0.5}}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Environment, RunSource]:
    root = tmp_path_factory.mktemp("generated")
    env = make_env(root / "env", finetune=FINETUNE, cases=CASES, pool_rows=30)
    return env, run_source(root / "runs", "run-1", forty_wrong_of_fifty())


@st.composite
def shares(draw: st.DrawFn) -> SplitShares:
    test = draw(st.integers(1, 60))
    validation = draw(st.integers(0, 99 - test))
    return SplitShares(train=100 - test - validation, validation=validation, test=test)


@settings(max_examples=25, deadline=None)
@given(
    method=st.sampled_from(list(Method)),
    factor=st.integers(0, 6),
    pool_share=st.sampled_from([0.0, 0.5, 1.0]),
    seed=st.integers(0, 1_000),
    splits=shares(),
)
def test_generated_preparations_package_without_held_out_text_in_training(
    source: tuple[Environment, RunSource],
    method: Method,
    factor: int,
    pool_share: float,
    seed: int,
    splits: SplitShares,
) -> None:
    env, run = source
    spec = make_spec(
        method=method.value,
        settings={"augmentation_factor": factor, "pool_share": pool_share, "seed": seed, "splits": splits},
    )
    profile = {
        Method.DEMONSTRATION: "trl-sft",
        Method.PREFERENCE: "trl-dpo",
        Method.REINFORCEMENT: "trl-grpo",
    }[method]
    with tempfile.TemporaryDirectory() as tmp:
        prep = Path(tmp) / "prep"
        report = generate(spec, env, [run], prep)
        held_out = read_held_out(prep)
        info = PreparationInfo(
            state_hash=report.state_hash,
            method=method,
            environment_id=spec.environment_id,
            environment_version=spec.environment_version,
            benchmark="GSM8K",
            base_model=report.base_model,
            suggested_hyperparams=report.suggested_hyperparams,
            spec=spec.model_dump(mode="json"),
        )
        if not report.splits["train"]:
            # Large test and validation shares can leave the train buckets without a case: refused, not empty
            with pytest.raises(PackageRefused, match=f"profile {profile} needs at least 1 train row and"):
                build_package(prep, info, profile, Path(tmp) / "out", cases=case_questions(env))
            return
        package = build_package(prep, info, profile, Path(tmp) / "out", cases=case_questions(env))
        with zipfile.ZipFile(package.path) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            trained = [
                json.loads(line)
                for name in ("train.jsonl", "validation.jsonl")
                for line in archive.read(name).decode("utf-8").splitlines()
            ]

    # every row the preparation made is in the package, split for split
    for split, count in report.splits.items():
        assert package.files[f"{split}.jsonl"]["rows"] == count
    # the held-out list is the preparation's, and no training row carries a held-out question
    assert manifest["held_out"]["cases"] == [c.model_dump() for c in held_out]
    held_ids = {c.case_id for c in held_out}
    questions = {text_hash(c["question"]) for i in range(CASES) if (c := case(i))["id"] in held_ids}
    for row in trained:
        prompt = row["messages"] if method is Method.DEMONSTRATION else row["prompt"]
        user = next(m["content"] for m in prompt if m["role"] == "user")
        assert text_hash(user) not in questions
    # the contamination report compared the question of every held-out case, with or without a test row,
    # and found that no training row shares 13 words with one (the variants' wordings are not questions)
    long_enough = [
        i
        for i in range(CASES)
        if case(i)["id"] in held_ids and len(re.findall(r"\w+", case(i)["question"])) >= 13
    ]
    assert package.contamination["held_out_cases_checked"] == len(long_enough)
    assert package.contamination["held_out_cases_too_short"] == len(held_ids) - len(long_enough)
    assert package.contamination["rows_with_overlap"] == 0
