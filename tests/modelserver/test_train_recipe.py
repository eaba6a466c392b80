"""What one training step of a fine-tuning job computes: the trainer the job builds runs each layer forward
once a step, not again in the backward pass (TRL's default recomputes activations to save memory, a third
more compute that a model trained on this server's CPU rows cannot afford)."""

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
