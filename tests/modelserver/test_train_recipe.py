"""What one training step of a fine-tuning job computes: the trainer the job builds runs each layer forward
once a step, not again in the backward pass (TRL's default recomputes activations to save memory, a third
more compute that a model trained on this server's CPU rows cannot afford), over a batch of rows of like
length, so that little of it is padding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from modelserver.train import build

ROW = {
    "messages": [
        {"role": "user", "content": "What is 2 + 3?"},
        {"role": "assistant", "content": "Final answer: 5"},
    ]
}


def _spec(tmp_path: Path, tiny_model: Path) -> dict[str, Any]:
    """An SFT job of one row and one step on the tiny model."""
    rows = tmp_path / "train.jsonl"
    rows.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    return {
        "base_folder": str(tiny_model),
        "training_file": str(rows),
        "training_name": "train.jsonl",
        "hyperparameters": {"n_epochs": 1, "learning_rate": 0.01, "batch_size": 1, "warmup_ratio": 0},
        "output": str(tmp_path / "out"),
    }


def test_a_training_step_runs_each_layer_forward_once(tiny_model: Path, tmp_path: Path) -> None:
    spec = _spec(tmp_path, tiny_model)
    trainer = build(tmp_path, spec)
    calls: list[bool] = []

    def count(module: Any, *_: Any) -> None:
        calls.append(module.training)

    trainer.model.model.layers[0].self_attn.register_forward_pre_hook(count)

    trainer.train()

    assert trainer.state.global_step == 1
    assert calls == [True]
    assert json.loads((tmp_path / "progress.json").read_text(encoding="utf-8"))["step"] == 1


def test_the_trainer_autocasts_to_bf16_where_the_hardware_computes_it(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(tmp_path, tiny_model)
    for native in (True, False):
        monkeypatch.setattr("modelserver.weights.bf16_in_hardware", lambda native=native: native)
        assert build(tmp_path, spec).args.bf16 is native


def test_the_trainer_batches_rows_of_like_length(tiny_model: Path, tmp_path: Path) -> None:
    # Given a job of 64 rows, short and long in turn
    spec = _spec(tmp_path, tiny_model)
    spec["hyperparameters"] = spec["hyperparameters"] | {"batch_size": 4}
    long_answer = "Final answer: " + " ".join(["5"] * 40)
    lines = [
        json.dumps({"messages": [ROW["messages"][0], {"role": "assistant", "content": answer}]})
        for _ in range(32)
        for answer in ("Final answer: 5", long_answer)
    ]
    Path(spec["training_file"]).write_text("\n".join(lines) + "\n", encoding="utf-8")

    # When the job's trainer draws its batches
    batches = list(build(tmp_path, spec).get_train_dataloader())

    # Then nearly every batch holds rows of one length, and so no padding (shuffled, a batch of 4 would mix
    # the two lengths 7 times in 8)
    padded = [batch for batch in batches if not batch["attention_mask"].all()]
    assert len(batches) == 16
    assert len(padded) <= 4, f"{len(padded)} of 16 batches padded"
