"""A preparation turns scored runs into prepared examples and a held-out list, on a real folder bundle."""

from __future__ import annotations

import hashlib
import json
import random
import re
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from benchgen.environment import Environment
from benchgen.finetune.artifact import build_artifact
from benchgen.finetune.split import SplitShares, in_test_bucket
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME, Kind, text_hash
from benchgen.training.preparation import (
    EMPTY_NO_REJECTED,
    HELD_OUT_TEXT,
    NO_QUESTION,
    OUTSIDE_SCOPE,
    PASSED_NO_REJECTED,
    POOL_NO_REJECTED,
    STATE_VERSION,
    PreparationError,
    RunSource,
    SourceProblem,
    SourcesRefused,
    check_sources,
    generate,
    state_hash,
)
from benchgen.vocabulary import Method
from tests.unit.finetune_inputs import RUN, case, forty_wrong_of_fifty, jsonl, make_env, verdict, wrong_answer
from tests.unit.preparation_inputs import make_spec, read_examples, read_held_out, run_source

CASES = [f"gsm-{i:03d}" for i in range(50)]
HELD = [case_id for case_id in CASES if in_test_bucket(case_id)]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    return make_env(
        tmp_path_factory.mktemp("env"), finetune={"pool": {"path": "pool.jsonl", "share": 0.25}}, pool_rows=30
    )


def test_demonstration_rows_teach_the_gold_answer_and_keep_their_source(
    env: Environment, tmp_path: Path
) -> None:
    # given a run that got 40 of 50 cases wrong, factor 5 and a quarter pool share
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    # when a demonstration preparation is generated
    report = generate(make_spec(), env, [run], tmp_path / "prep")
    examples = read_examples(tmp_path / "prep")
    # then each wrong case gives its seed and four variants, and 10 pool rows join (a quarter of 40 seeds)
    assert report.kinds == {"seed": 40, "augmented": 160, "pool": 10}
    assert report.example_count == len(examples) == 210
    assert report.source_cases == 40
    assert report.dropped == {}
    assert report.base_model == "Qwen2.5-7B-LoRA"
    assert report.suggested_hyperparams["learning_rate"] == 2e-4
    # and no row carries a rejected answer; every target ends on the gold answer, never the wrong one
    seed = next(e for e in examples if e.example_id == "gsm-003~00")
    assert seed.rejected is None
    assert seed.chosen.endswith(f"Final answer: {case(3)['answer']}")
    assert wrong_answer(3) not in seed.chosen
    assert seed.prompt == case(3)["question"]
    assert seed.source.run_id == "run-1"
    assert seed.source.response == f"The answer is {wrong_answer(3)}."
    assert seed.source.verdict is not None and seed.source.verdict.passed is False
    assert seed.source_text_hash == text_hash(case(3)["question"])
    assert seed.criteria == ["arithmetic"]
    assert seed.breakdown == {"difficulty": "easy"}
    # and variants keep their case's split, source and question hash
    family = [e for e in examples if e.source.case_id == "gsm-003"]
    assert [e.variant for e in family] == [0, 1, 2, 3, 4]
    assert {(e.split, e.source_text_hash) for e in family} == {(seed.split, seed.source_text_hash)}
    assert {e.kind for e in family[1:]} == {Kind.AUGMENTED}
    pool = [e for e in examples if e.kind is Kind.POOL]
    assert all(e.source.run_id is None and e.source.verdict is None for e in pool)


def test_examples_file_is_compact_json_ordered_by_split_then_id(env: Environment, tmp_path: Path) -> None:
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    report = generate(make_spec(), env, [run], tmp_path / "prep")
    lines = (tmp_path / "prep" / EXAMPLES_NAME).read_bytes().splitlines()
    examples = read_examples(tmp_path / "prep")
    # then each line is the model's own compact JSON, and the order is train, validation, test, then id
    assert lines == [e.model_dump_json().encode("utf-8") for e in examples]
    rank = {"train": 0, "validation": 1, "test": 2}
    keys = [(rank[e.split], e.example_id) for e in examples]
    assert keys == sorted(keys)
    assert report.splits == dict(Counter(e.split.value for e in examples))


def test_held_out_lists_every_test_bucket_case_passed_ones_included(env: Environment, tmp_path: Path) -> None:
    # given a run that got only the first ten cases wrong (every held-out case but one was passed)
    run = run_source(tmp_path, "run-1", [verdict(i, passed=i >= 10) for i in range(50)])
    report = generate(make_spec(), env, [run], tmp_path / "prep")
    held = read_held_out(tmp_path / "prep")
    # then held_out.jsonl names exactly the environment's test-bucket cases, by id, with their text hashes
    assert [h.case_id for h in held] == sorted(HELD) == ["gsm-009", "gsm-015", "gsm-035"]
    assert [h.text_hash for h in held] == [text_hash(case(int(h.case_id[4:]))["question"]) for h in held]
    assert report.held_out_count == 3
    # and the one wrong held-out case still gives rows, in the test split only
    assert {e.split.value for e in read_examples(tmp_path / "prep") if e.source.case_id == "gsm-009"} == {
        "test"
    }


def test_a_train_row_with_a_held_out_question_is_dropped(env: Environment, tmp_path: Path) -> None:
    # given a wrong verdict on a case id outside cases.jsonl, in the train bucket, whose question is a
    # held-out case's question written in other case and spacing
    twin = verdict(15, passed=False) | {"case_id": "twin-1", "question": "  " + case(15)["question"].upper()}
    assert not in_test_bucket("twin-1")
    run = run_source(tmp_path, "run-1", [*forty_wrong_of_fifty(), twin])
    # when the preparation is generated
    report = generate(make_spec(settings={"augmentation_factor": 3}), env, [run], tmp_path / "prep")
    # then its seed and both variants are dropped and counted, and nothing else is
    assert report.dropped == {HELD_OUT_TEXT: 3}
    assert all(e.source.case_id != "twin-1" for e in read_examples(tmp_path / "prep"))


def test_a_pool_row_named_like_a_held_out_case_is_dropped(tmp_path: Path) -> None:
    # given a pool whose rows reuse held-out case ids (in a train bucket by their pool key)
    env = make_env(tmp_path / "env", finetune={"pool": {"path": "pool.jsonl", "share": 1.0}}, pool_rows=1)
    rows = [
        {"id": case_id, "question": f"What is {n} + 2?", "answer": str(n + 2)}
        for n, case_id in enumerate(HELD)
    ]
    (env.root / "pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    report = generate(make_spec(), env, [run], tmp_path / "prep")
    kept = {e.source.case_id for e in read_examples(tmp_path / "prep") if e.kind is Kind.POOL}
    # then every pool row outside the test split is dropped as a held-out match
    train_side = [r["id"] for r in rows if not in_test_bucket(f"pool:{r['id']}")]
    assert train_side
    assert report.dropped == {HELD_OUT_TEXT: len(train_side)}
    assert kept.isdisjoint(train_side)


def test_preference_rejects_the_model_own_wrong_answer_and_drops_the_rest(
    env: Environment, tmp_path: Path
) -> None:
    # given all items selected: 40 wrong (one with no output at all), 10 passed, and a pool share
    verdicts = forty_wrong_of_fifty()
    verdicts[7] |= {"prediction": None, "raw_prediction": "", "answered": False}
    run = run_source(tmp_path, "run-1", verdicts)
    spec = make_spec(method="preference", selection="all_items")
    report = generate(spec, env, [run], tmp_path / "prep")
    examples = read_examples(tmp_path / "prep")
    # then each kept row rejects the model's own wrong output and chooses the gold answer
    assert all(e.rejected == f"The answer is {wrong_answer(int(e.source.case_id[4:]))}." for e in examples)
    assert report.kinds == {"seed": 39, "augmented": 156, "pool": 0}
    # and passed cases, the silent wrong case and the pool rows are dropped, each with its reason
    assert report.dropped == {PASSED_NO_REJECTED: 10, EMPTY_NO_REJECTED: 5, POOL_NO_REJECTED: 10}


def test_several_runs_give_one_family_per_case_from_the_first_run_that_selected_it(
    env: Environment, tmp_path: Path
) -> None:
    # given run-a wrong on cases 0-9 and run-b wrong on cases 5-19, both selecting all items
    run_a = run_source(tmp_path, "run-a", [verdict(i, passed=i >= 10) for i in range(50)], model="model-a")
    run_b = run_source(
        tmp_path, "run-b", [verdict(i, passed=not 5 <= i < 20) for i in range(50)], model="model-b"
    )
    spec = make_spec(run_ids=["run-a", "run-b"], selection="all_items", settings={"augmentation_factor": 1})
    # when a demonstration preparation draws from both (sources given in another order)
    report = generate(spec, env, [run_b, run_a], tmp_path / "demo")
    sources = {
        e.source.case_id: e.source.run_id for e in read_examples(tmp_path / "demo") if e.kind is not Kind.POOL
    }
    # then every case appears once, from run-a, the first run that selected it (passed or not)
    assert len(sources) == 50 and set(sources.values()) == {"run-a"}
    assert report.base_model == "model-a"
    # and a preference preparation takes each case from the first run that got it wrong
    generate(spec.model_copy(update={"method": Method.PREFERENCE}), env, [run_a, run_b], tmp_path / "pref")
    pref = {
        e.source.case_id: e.source.run_id for e in read_examples(tmp_path / "pref") if e.kind is not Kind.POOL
    }
    assert pref == {f"gsm-{i:03d}": "run-a" if i < 10 else "run-b" for i in range(20)}


def test_criteria_scope_keeps_rows_whose_governing_criteria_meet_it(tmp_path: Path) -> None:
    # given two criteria, the even cases judged on geometry and the odd ones on arithmetic
    env = make_env(
        tmp_path / "env",
        finetune={"augmentation": {"factor": 2}},
        criteria=[{"id": "arithmetic"}, {"id": "geometry"}],
    )
    verdicts = forty_wrong_of_fifty()
    for v in verdicts[::2]:
        v["criteria"] = [{"id": "geometry", "passed": False}]
    run = run_source(tmp_path, "run-1", verdicts)
    # when the scope is geometry
    report = generate(make_spec(criteria=["geometry"]), env, [run], tmp_path / "prep")
    examples = read_examples(tmp_path / "prep")
    # then only the 20 even wrong cases are kept, and the 20 odd ones (seed and variant) are counted
    assert {e.source.case_id for e in examples} == {f"gsm-{i:03d}" for i in range(0, 40, 2)}
    assert all(e.criteria == ["geometry"] for e in examples)
    assert report.dropped == {OUTSIDE_SCOPE: 40}


def test_an_empty_scope_keeps_every_criterion(tmp_path: Path) -> None:
    # given verdicts that name no criteria: their rows are governed by all of the environment's criteria
    env = make_env(tmp_path / "env", finetune={}, criteria=[{"id": "arithmetic"}, {"id": "geometry"}])
    verdicts = [v | {"criteria": []} for v in forty_wrong_of_fifty()]
    generate(make_spec(), env, [run_source(tmp_path, "run-1", verdicts)], tmp_path / "all")
    assert {tuple(e.criteria) for e in read_examples(tmp_path / "all")} == {("arithmetic", "geometry")}
    generate(
        make_spec(criteria=["geometry"]), env, [run_source(tmp_path, "run-1", verdicts)], tmp_path / "geo"
    )
    assert len(read_examples(tmp_path / "geo")) == 200


def test_settings_override_the_bundle(env: Environment, tmp_path: Path) -> None:
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    spec = make_spec(
        settings={"augmentation_factor": 2, "pool_share": 0.5, "splits": {"train": 50, "test": 40}}
    )
    report = generate(spec, env, [run], tmp_path / "prep")
    examples = read_examples(tmp_path / "prep")
    # then one variant per seed, a pool of half the seeds, and the splits follow the shares
    assert report.kinds == {"seed": 40, "augmented": 40, "pool": 20}
    assert all(
        e.split.value == "test"
        for e in examples
        if in_test_bucket(e.source.case_id, SplitShares(train=50, test=40)) and e.kind is not Kind.POOL
    )
    assert report.held_out_count == sum(in_test_bucket(c, SplitShares(train=50, test=40)) for c in CASES) > 3


def test_a_case_without_question_text_is_counted(env: Environment, tmp_path: Path) -> None:
    # given a wrong verdict on an unknown case that recorded no question
    blank = verdict(1, passed=False) | {"case_id": "blank-1", "question": ""}
    run = run_source(tmp_path, "run-1", [*forty_wrong_of_fifty(), blank])
    report = generate(make_spec(), env, [run], tmp_path / "prep")
    assert report.dropped == {NO_QUESTION: 1}


def test_same_inputs_give_the_same_bytes_and_state_hash(env: Environment, tmp_path: Path) -> None:
    verdicts = forty_wrong_of_fifty()
    shuffled = random.Random(7).sample(verdicts, len(verdicts))
    first = generate(
        make_spec(), env, [run_source(tmp_path / "a", "run-1", verdicts)], tmp_path / "a" / "out"
    )
    second = generate(
        make_spec(), env, [run_source(tmp_path / "b", "run-1", shuffled)], tmp_path / "b" / "out"
    )
    for name in (EXAMPLES_NAME, HELD_OUT_NAME):
        assert (tmp_path / "a" / "out" / name).read_bytes() == (tmp_path / "b" / "out" / name).read_bytes()
    assert first.state_hash == second.state_hash
    # and nothing but the two files is left behind
    assert sorted(p.name for p in (tmp_path / "a" / "out").iterdir()) == [EXAMPLES_NAME, HELD_OUT_NAME]


def test_another_seed_chooses_other_variants_and_pool_rows(env: Environment, tmp_path: Path) -> None:
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    zero = generate(make_spec(), env, [run], tmp_path / "zero")
    seven = generate(make_spec(settings={"seed": 7}), env, [run], tmp_path / "seven")
    assert zero.state_hash != seven.state_hash
    prompts = {
        name: {(e.example_id, e.prompt, e.system) for e in read_examples(tmp_path / name)}
        for name in ("zero", "seven")
    }
    assert prompts["zero"] != prompts["seven"]
    pool = {
        name: {e.source.case_id for e in read_examples(tmp_path / name) if e.kind is Kind.POOL}
        for name in ("zero", "seven")
    }
    assert pool["zero"] != pool["seven"]
    # and the seeds themselves do not depend on it
    seeds = {
        name: {(e.example_id, e.prompt) for e in read_examples(tmp_path / name) if e.kind is Kind.SEED}
        for name in ("zero", "seven")
    }
    assert seeds["zero"] == seeds["seven"]


def test_seed_zero_keeps_the_run_artifact_rows(env: Environment, tmp_path: Path) -> None:
    # given the same run made into the run artifact and into a preparation with default settings
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    build_artifact(env, run.scoring_output, tmp_path / "artifact", run=RUN)
    with zipfile.ZipFile(tmp_path / "artifact" / "finetune_artifact.zip") as archive:
        rows = jsonl(archive.read("data/rows.jsonl"))
    generate(make_spec(), env, [run], tmp_path / "prep")
    # then both hold the same rows, in the same order, with the same split, prompt, system and target
    ours = [
        (e.example_id, e.split.value, e.prompt, e.system, e.chosen) for e in read_examples(tmp_path / "prep")
    ]
    theirs = [(r["id"], r["split"], r["prompt"], r["system"], r["answer"]) for r in rows]
    assert ours == theirs


def test_state_hash_covers_a_version_tag_the_spec_and_every_example_byte(tmp_path: Path) -> None:
    examples = tmp_path / EXAMPLES_NAME
    examples.write_bytes(b'{"a":1}\n')
    spec = make_spec()
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode()
    expected = hashlib.sha256(STATE_VERSION.encode() + b"\n" + canonical + b"\n" + b'{"a":1}\n').hexdigest()
    assert state_hash(spec, examples) == expected
    assert state_hash(make_spec(criteria=["arithmetic"]), examples) != expected
    examples.write_bytes(b'{"a":2}\n')
    assert state_hash(spec, examples) != expected


@pytest.mark.parametrize(
    ("fields", "sources", "message"),
    [
        (
            {"run_ids": ["run-1", "run-1"]},
            ["run-1"],
            "run_ids names run-1 more than once: list each run once",
        ),
        ({"run_ids": ["run-1", "run-2"]}, ["run-1"], "no run run-2: check run_ids (GET /runs lists runs)"),
        (
            {},
            ["run-1", "run-9"],
            "runs run-9 were given but run_ids does not name them; add them to run_ids or leave them out",
        ),
        (
            {"environment_version": "2"},
            ["run-1"],
            "runs run-1 (gsm8k version 1) are not on gsm8k version 2: a preparation draws from runs of one "
            "environment version only",
        ),
        (
            {"criteria": ["geometry"]},
            ["run-1"],
            "criteria geometry are not criteria of gsm8k version 1; the valid ids are arithmetic",
        ),
    ],
)
def test_specs_that_cannot_be_prepared_are_refused_with_what_to_change(
    env: Environment, tmp_path: Path, fields: dict[str, Any], sources: list[str], message: str
) -> None:
    runs = [run_source(tmp_path, run_id, forty_wrong_of_fifty()) for run_id in sources]
    with pytest.raises(PreparationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        generate(make_spec(**fields), env, runs, tmp_path / "prep")
    assert not (tmp_path / "prep" / EXAMPLES_NAME).exists()


def test_criteria_on_an_environment_without_criteria_are_refused(tmp_path: Path) -> None:
    env = make_env(tmp_path / "env", finetune={}, criteria=[])
    with pytest.raises(PreparationError, match="the valid ids are none: leave criteria empty"):
        generate(
            make_spec(criteria=["arithmetic"]),
            env,
            [run_source(tmp_path, "run-1", forty_wrong_of_fifty())],
            tmp_path / "p",
        )


def test_an_environment_without_cases_is_refused(tmp_path: Path) -> None:
    env = make_env(tmp_path / "env", finetune={})
    (env.root / "reference" / "cases.jsonl").unlink()
    with pytest.raises(
        PreparationError, match=r"prepare from an environment whose reference data holds cases\.jsonl"
    ):
        generate(make_spec(), env, [run_source(tmp_path, "run-1", forty_wrong_of_fifty())], tmp_path / "p")


def test_a_pool_share_without_a_pool_is_refused(tmp_path: Path) -> None:
    env = make_env(tmp_path / "env", finetune={})
    with pytest.raises(PreparationError, match="names no pool; leave pool_share unset or 0"):
        generate(
            make_spec(settings={"pool_share": 0.3}),
            env,
            [run_source(tmp_path, "run-1", forty_wrong_of_fifty())],
            tmp_path / "p",
        )


@pytest.mark.parametrize(
    ("member", "content", "message"),
    [
        ("scores.json", "{}", "run 'run-1': its scoring output holds no per-case verdicts"),
        ("verdicts.jsonl", '{"case_id": "x"}\n', "run 'run-1': verdicts.jsonl line 1 is not a verdict"),
    ],
)
def test_a_run_whose_verdicts_cannot_be_read_is_refused_by_name(
    env: Environment, tmp_path: Path, member: str, content: str, message: str
) -> None:
    output = tmp_path / "scoring_output.zip"
    with zipfile.ZipFile(output, "w") as archive:
        archive.writestr(member, content)
    run = RunSource("run-1", "m", "gsm8k", "1", output)
    with pytest.raises(PreparationError, match=re.escape(message)):
        generate(make_spec(), env, [run], tmp_path / "prep")


def test_nothing_left_to_train_on_is_refused_with_the_reasons(env: Environment, tmp_path: Path) -> None:
    # given a run that passed everything, prepared for preference over all items, without pool rows
    run = run_source(tmp_path, "run-1", [verdict(i, passed=True) for i in range(50)])
    spec = make_spec(method="preference", selection="all_items", settings={"pool_share": 0})
    with pytest.raises(
        PreparationError, match=f"no example is left to train on \\(50 {PASSED_NO_REJECTED}\\)"
    ):
        generate(spec, env, [run], tmp_path / "prep")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"run_ids": []}, "at least 1 item"),
        ({"run_ids": [f"r{i}" for i in range(21)]}, "at most 20 items"),
        ({"method": "sft"}, "'demonstration', 'preference' or 'reinforcement'"),
        ({"settings": {"augmentation_factor": 51}}, "less than or equal to 50"),
        ({"settings": {"pool_share": 1.5}}, "less than or equal to 1"),
        ({"settings": {"splits": {"train": 90, "validation": 0, "test": 0}}}, "greater than or equal to 1"),
        ({"critera": ["arithmetic"]}, "Extra inputs are not permitted"),
    ],
)
def test_malformed_specs_are_refused_on_reading(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        make_spec(**fields)


@pytest.mark.parametrize(
    ("fields", "found", "problem"),
    [
        ({"run_ids": ["run-1", "run-1"]}, ["run-1"], SourceProblem.REPEATED_RUN),
        ({"run_ids": ["run-1", "run-2"]}, ["run-1"], SourceProblem.UNKNOWN_RUN),
        ({"environment_version": "2"}, ["run-1"], SourceProblem.OTHER_VERSION),
        ({"criteria": ["geometry"]}, ["run-1"], SourceProblem.UNKNOWN_CRITERION),
    ],
)
def test_the_api_and_generate_refuse_a_spec_with_one_check_and_one_message(
    env: Environment, tmp_path: Path, fields: dict[str, Any], found: list[str], problem: SourceProblem
) -> None:
    # given a spec the API refuses over the records it read (the problem named for its status code)
    spec = make_spec(**fields)
    runs = {run_id: run_source(tmp_path, run_id, forty_wrong_of_fifty()) for run_id in found}
    with pytest.raises(SourcesRefused) as at_the_api:
        check_sources(spec, {run_id: runs.get(run_id) for run_id in spec.run_ids}, criteria=["arithmetic"])
    assert at_the_api.value.problem is problem

    # when Generate is handed it all the same, then it refuses it with the very same sentence
    with pytest.raises(PreparationError) as in_generate:
        generate(spec, env, list(runs.values()), tmp_path / "prep")
    assert str(in_generate.value) == str(at_the_api.value)
