"""A reinforcement preparation: the run's mistakes as prompts, each with what the environment's scoring
needs to grade an answer, and optionally a share of the cases the model got right."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.environment import Environment
from benchgen.finetune.seed import Source
from benchgen.finetune.split import Split, in_test_bucket
from benchgen.training.examples import EXAMPLES_NAME
from benchgen.training.preparation import POOL_NO_GRADING, PreparationError, generate
from tests.unit.finetune_inputs import case, forty_wrong_of_fifty, make_env, verdict
from tests.unit.preparation_inputs import make_spec, read_examples, run_source


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    return make_env(
        tmp_path_factory.mktemp("env"), finetune={"pool": {"path": "pool.jsonl", "share": 0.25}}, pool_rows=30
    )


def test_reinforcement_examples_carry_their_cases_grading_shared_by_every_variant(
    env: Environment, tmp_path: Path
) -> None:
    # given a run that got 40 of 50 math cases wrong, and a bundle that mixes in a pool
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    # when a reinforcement preparation is generated
    report = generate(make_spec(method="reinforcement"), env, [run], tmp_path / "prep")
    examples = read_examples(tmp_path / "prep")
    # then the mistakes and their variants are the prompts; no pool row joins, since none is a case to grade
    assert report.kinds == {"seed": 40, "augmented": 160, "pool": 0}
    assert report.dropped == {POOL_NO_GRADING: 10}
    # and each example carries its source case's grading: the math template, the gold answer, the criteria
    for example in examples:
        i = int(example.source.case_id.removeprefix("gsm-"))
        assert example.grading is not None
        assert example.grading["template"] == "math"
        assert example.grading["answer"] == case(i)["answer"]
        assert example.grading["criteria"] == ["arithmetic"]
        assert example.rejected is None
    # and a variant's prompt is reworded while its grading is the seed's, byte for byte
    family = [e for e in examples if e.source.case_id == "gsm-003"]
    assert len({e.prompt for e in family}) == 5
    assert len({repr(e.grading) for e in family}) == 1


def test_the_other_methods_write_no_grading_field(env: Environment, tmp_path: Path) -> None:
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    for method in ("demonstration", "preference"):
        generate(make_spec(method=method), env, [run], tmp_path / method)
        text = (tmp_path / method / EXAMPLES_NAME).read_text(encoding="utf-8")
        assert '"grading"' not in text
        assert all(example.grading is None for example in read_examples(tmp_path / method))


def test_correct_share_mixes_in_that_share_of_the_cases_the_model_got_right(
    env: Environment, tmp_path: Path
) -> None:
    # given a run that got cases 40 to 49 right
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    passed = {f"gsm-{i:03d}" for i in range(40, 50)}

    def mixed_in(share: float | None, seed: int = 0) -> set[str]:
        settings = {"augmentation_factor": 1, "pool_share": 0.0, "seed": seed}
        if share is not None:
            settings["correct_share"] = share
        out = tmp_path / f"prep-{share}-{seed}"
        generate(make_spec(method="reinforcement", settings=settings), env, [run], out)
        examples = read_examples(out)
        assert all(e.grading is not None for e in examples)
        return {e.source.case_id for e in examples if e.source.layer is Source.PASSED}

    # when no share is asked, none of them is mixed in; all of them at a share of 1
    assert mixed_in(None) == set()
    assert mixed_in(0.0) == set()
    assert mixed_in(1.0) == passed
    # and at a half, some of them, the same ones again for the same seed, others for another seed
    half = mixed_in(0.5)
    assert set() < half < passed
    assert mixed_in(0.5) == half
    assert any(mixed_in(0.5, seed) != half for seed in (1, 2, 3))


def test_a_passed_case_keeps_the_run_that_got_it_wrong_as_its_source(
    env: Environment, tmp_path: Path
) -> None:
    # given case 45 right in the first run and wrong in the second
    first = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    second = run_source(tmp_path, "run-2", [verdict(45, passed=False)])
    settings = {"augmentation_factor": 1, "pool_share": 0.0, "correct_share": 1.0}
    spec = make_spec(method="reinforcement", run_ids=["run-1", "run-2"], settings=settings)
    generate(spec, env, [first, second], tmp_path / "prep")
    # then the mistake wins: the case is a seed of the second run, not a passed case of the first
    (example,) = [e for e in read_examples(tmp_path / "prep") if e.source.case_id == "gsm-045"]
    assert (example.source.layer, example.source.run_id) == (Source.SEED, "run-2")


def test_correct_share_is_refused_for_the_other_methods(env: Environment, tmp_path: Path) -> None:
    run = run_source(tmp_path, "run-1", forty_wrong_of_fifty())
    spec = make_spec(method="demonstration", settings={"correct_share": 0.5})
    with pytest.raises(PreparationError, match="only a reinforcement preparation mixes in"):
        generate(spec, env, [run], tmp_path / "prep")


def test_held_out_cases_stay_in_the_test_split_of_a_reinforcement_preparation(
    env: Environment, tmp_path: Path
) -> None:
    # given every case wrong, so the held-out ones are mistakes too, and the correct share at its widest
    run = run_source(tmp_path, "run-1", [verdict(i, passed=False) for i in range(50)])
    spec = make_spec(method="reinforcement", settings={"correct_share": 1.0, "pool_share": 0.0})
    generate(spec, env, [run], tmp_path / "prep")
    # then a held-out case's examples are test examples only, and no other example is one of them
    for example in read_examples(tmp_path / "prep"):
        assert (example.split is Split.TEST) == in_test_bucket(example.source.case_id)
