"""A GRPO step whose answers all got their prompt's same reward moves nothing but Adam's momentum: the job
computes no loss for it, and trains to the very weights TRL's own trainer, which computes it, reaches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from modelserver import train
from tests.modelserver.test_rollouts import _spec

# Only the first answer of the job is right: the first step holds a prompt whose answers differ, every
# later one only answers rewarded alike.
GRADER = """
CALLS = []

def grade(sample, item):
    CALLS.append(1)
    return 1.0 if len(CALLS) == 1 else 0.0
"""


def _trained(tmp_path: Path, tiny_model: Path) -> tuple[Any, list[bool], list[dict[str, Any]]]:
    tmp_path.mkdir()
    grader = {"grader": {"name": "g", "source": GRADER}}
    spec = _spec(tmp_path, tiny_model, "transformers", n_epochs=2) | grader
    trainer = train.build(tmp_path, spec)
    losses: list[bool] = []
    seen: list[dict[str, Any]] = []
    loss = trainer._compute_loss

    def counted(*args: Any, **kwargs: Any) -> Any:
        losses.append(True)
        return loss(*args, **kwargs)

    trainer._compute_loss = counted
    from transformers import TrainerCallback

    class Logged(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if (logs or {}).get("loss") is not None:
                seen.append(dict(logs))

    trainer.add_callback(Logged())
    trainer.train()
    return trainer, losses, seen


def test_a_step_without_signal_skips_the_loss_and_trains_to_the_same_weights(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the same four-step job, trained by the job's trainer and by TRL's own
    skipping, skipping_losses, skipping_logs = _trained(tmp_path / "skipping", tiny_model)
    monkeypatch.setattr(train, "_skipping_steps_without_signal", lambda trainer_class: trainer_class)
    computing, computing_losses, computing_logs = _trained(tmp_path / "computing", tiny_model)

    # then the job's trainer computed TRL's loss for the first step only, and logged the others as skipped
    assert [entry["reward"] for entry in computing_logs] == [0.25, 0.0, 0.0, 0.0]
    assert [entry["reward"] for entry in skipping_logs] == [0.25, 0.0, 0.0, 0.0]
    assert len(computing_losses) == 4
    assert len(skipping_losses) == 1
    assert [entry["loss_skipped"] for entry in skipping_logs] == [0.0, 1.0, 1.0, 1.0]
    progress = json.loads((tmp_path / "skipping" / train.PROGRESS).read_text(encoding="utf-8"))
    assert progress["steps_without_signal"] == 3
    # and both reached the same weights: the optimizer took the same steps from the same gradients
    moved = dict(computing.model.named_parameters())
    for name, parameter in skipping.model.named_parameters():
        assert parameter.equal(moved[name]), name
    (tmp_path / "initial").mkdir()
    initial = train.build(tmp_path / "initial", _spec(tmp_path / "initial", tiny_model, "transformers")).model
    assert not all(parameter.equal(moved[name]) for name, parameter in initial.named_parameters()), (
        "the first step moved the policy"
    )
