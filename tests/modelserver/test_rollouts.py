"""A reinforcement job's answers: sampled by CTranslate2 from the policy being trained where the server
generates with CTranslate2, in the shape TRL's GRPOTrainer takes from a rollout function; by TRL's own
transformers generate where the server generates with transformers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from modelserver.engines import Decoding, Sampling, TransformersModel
from modelserver.rollouts import cut_at_end
from modelserver.train import PROGRESS, build
from modelserver.weights import load_tokenizer

GRADER = """
def grade(sample, item):
    return 1.0 if item["grading"]["answer"] in sample["output_text"] else 0.0
"""
QUESTIONS = [f"What is 2 + {n}?" for n in range(4)]


def _spec(tmp_path: Path, tiny_model: Path, engine: str, **numbers: Any) -> dict[str, Any]:
    rows = tmp_path / "rft.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"messages": [{"role": "user", "content": q}], "grading": {"answer": "5"}}) + "\n"
            for q in QUESTIONS
        ),
        encoding="utf-8",
    )
    hyperparameters = {
        "n_epochs": 1,
        "learning_rate": 0.01,
        "batch_size": 2,
        "num_generations": 2,
        "max_completion_length": 6,
        "temperature": 1.0,
        "beta": 0.0,
    }
    return {
        "base_folder": str(tiny_model),
        "training_file": str(rows),
        "training_name": rows.name,
        "method": "reinforcement",
        "grader": {"name": "g", "source": GRADER},
        "hyperparameters": hyperparameters | numbers,
        "engine": engine,
        "output": str(tmp_path / "out"),
    }


def _repeated(times: int) -> list[list[dict[str, str]]]:
    """The prompts as TRL hands a rollout function a batch: each repeated num_generations times."""
    return [[{"role": "user", "content": q}] for q in QUESTIONS[:2] for _ in range(times)]


def test_ctranslate2_rollouts_answer_every_prompt_in_the_shape_grpo_takes(
    tiny_model: Path, tmp_path: Path
) -> None:
    # given a reinforcement job's trainer where the server generates with CTranslate2
    trainer = build(tmp_path, _spec(tmp_path, tiny_model, "ctranslate2"))
    prompts = _repeated(2)

    # when its rollout function answers a batch of prompts
    output = trainer.rollout_func(prompts, trainer)

    # then every prompt has one answer, read as TRL reads prompts, no longer than the job allows
    expected_ids, _, _ = trainer._tokenize_prompts(prompts)
    assert set(output) == {"prompt_ids", "completion_ids", "logprobs"}
    assert output["prompt_ids"] == expected_ids
    assert len(output["completion_ids"]) == len(prompts)
    assert all(1 <= len(answer) <= 6 for answer in output["completion_ids"])
    assert all(isinstance(token, int) for answer in output["completion_ids"] for token in answer)
    assert output["logprobs"] is None
    progress = json.loads((tmp_path / PROGRESS).read_text(encoding="utf-8"))
    assert progress["rollouts"]["engine"] == "ctranslate2"
    assert progress["rollouts"]["why"] == "asked for with --engine ctranslate2"


def test_greedy_ctranslate2_rollouts_are_transformers_greedy_answers(
    tiny_model: Path, tmp_path: Path
) -> None:
    # given a job's trainer sampling at temperature 0 with CTranslate2
    trainer = build(tmp_path, _spec(tmp_path, tiny_model, "ctranslate2", temperature=0))
    prompts = _repeated(1)

    # when it answers the prompts, and transformers answers them greedily from the same weights
    fast = trainer.rollout_func(prompts, trainer)["completion_ids"]
    ids, _, _ = trainer._tokenize_prompts(prompts)
    reference = TransformersModel(trainer.model, load_tokenizer(tiny_model), trainer.rollout_func.model.ends)
    slow = reference.generate(ids, Decoding(6, Sampling(), stopped=lambda _row: False))

    # then the answers are the same tokens
    assert fast == [cut_at_end(answer, reference.ends) for answer in slow]


def test_a_server_generating_with_transformers_leaves_the_rollouts_to_trl(
    tiny_model: Path, tmp_path: Path
) -> None:
    # given a reinforcement job where the server generates with transformers
    spec = _spec(tmp_path, tiny_model, "transformers")

    # when its trainer is built
    trainer = build(tmp_path, spec)

    # then TRL's own generate samples the answers, and the job's progress says which engine and why
    assert trainer.rollout_func is None
    progress = json.loads((tmp_path / PROGRESS).read_text(encoding="utf-8"))
    assert progress["rollouts"] == {"engine": "transformers", "why": "asked for with --engine transformers"}


def test_each_step_samples_from_the_policy_as_that_step_begins(tiny_model: Path, tmp_path: Path) -> None:
    # given a job of two steps sampling with CTranslate2
    trainer = build(tmp_path, _spec(tmp_path, tiny_model, "ctranslate2"))
    steps: list[dict[str, Any]] = []
    from transformers import TrainerCallback

    class Seen(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if (logs or {}).get("loss") is not None:
                steps.append(json.loads((tmp_path / PROGRESS).read_text(encoding="utf-8")))

    trainer.add_callback(Seen())

    # when it trains
    trainer.train()

    # then the policy trained by the first step was converted before the second step's answers
    assert [step["step"] for step in steps] == [1, 2]
    assert steps[1]["conversion_seconds"] > 0
    assert all(step["generation_seconds"] > 0 for step in steps)
    assert trainer.rollout_func.step == 1


def test_a_reinforcement_jobs_loss_weighs_each_answer_alike_whatever_its_length(
    tiny_model: Path, tmp_path: Path
) -> None:
    # given a reinforcement job's trainer
    trainer = build(tmp_path, _spec(tmp_path, tiny_model, "ctranslate2"))

    # then its loss averages each answer's tokens and then the answers (TRL's "grpo"), so that a short right
    # answer is not outweighed by the many tokens of long wrong ones, as under TRL's default ("dapo")
    assert trainer.loss_type == "grpo"
    assert trainer.args.loss_type == "grpo"
