"""The loop with the reinforcement method on a tiny model: every step through the REST API and a real
`benchgen model serve` (a two-layer model with random weights, so its answers are noise and the test says
nothing of whether GRPO helps), and a summary whose numbers agree with each other and with what the API
recorded. ``test_real_loop.py`` runs the same loop on the real model."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.loop import GRPO, SFT_GRPO
from cli.main import main
from cli.self_hosted_model import SelfHostedModel
from examplegen import generate_environment
from tests.integration.loop_checks import assert_consistent_reinforcement, kept_cloud_loop
from tests.modelserver.tiny_model import build_tiny_model

CASES = 30
# One SFT epoch and a GRPO step or two a leg, two prompts a step, each answered twice in at most 4 tokens:
# seconds a step on the tiny model.
SFT: dict[str, str | int | float] = {"n_epochs": 1, "batch_size": 4, "learning_rate": 0.001}
GRPO_SMALL: dict[str, str | int | float] = {
    "n_epochs": 1,
    "batch_size": 4,
    "num_generations": 2,
    "max_completion_length": 4,
    "learning_rate": 0.001,
}


def _tiny_source(tmp_path: Path, legs: tuple[str, ...] = (GRPO, SFT_GRPO)) -> SelfHostedModel:
    """A tiny model served by `benchgen model serve`, and a small arithmetic benchmark beside it."""
    tiny = build_tiny_model(tmp_path / "tiny-chat")
    generate_environment("arithmetic-en", tmp_path / "arithmetic-en", cases=CASES, seed=3)
    return SelfHostedModel(
        weights=str(tiny),
        model="tiny-chat",
        sampling={"temperature": 0, "max_tokens": 8},
        hyperparameters=SFT,
        grpo_hyperparameters=GRPO_SMALL,
        reinforcement_legs=legs,
        shard_size=4,
        run_timeout_s=600,
        training_timeout_s=600,
    )


def test_the_reinforcement_loop_trains_grpo_from_the_base_and_the_sft_model_and_compares_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a tiny model served by `benchgen model serve`, and a small arithmetic benchmark
    source = _tiny_source(tmp_path)

    # When the loop runs with the reinforcement method
    code, summary, read = kept_cloud_loop(monkeypatch, source, tmp_path / "arithmetic-en", tmp_path / "out")

    # Then every step completed, and the summary is consistent with itself and with the API
    printed = capsys.readouterr().out
    assert (code, summary["stopped"]) == (0, None), printed
    assert "step 8/8: GRPO from tiny-chat-" in printed
    assert_consistent_reinforcement(summary, read)


def test_a_loop_asked_for_the_sft_grpo_leg_alone_trains_and_evaluates_that_leg_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the tiny model's loop asked for the SFT+GRPO leg alone (as the real loop's bench may measure it)
    source = _tiny_source(tmp_path, legs=(SFT_GRPO,))

    # When the loop runs with the reinforcement method
    code, summary, read = kept_cloud_loop(monkeypatch, source, tmp_path / "arithmetic-en", tmp_path / "out")

    # Then it trained GRPO from the SFT checkpoint only, as its last step, and its summary is consistent
    printed = capsys.readouterr().out
    assert (code, summary["stopped"]) == (0, None), printed
    assert "step 7/7: GRPO from tiny-chat-" in printed
    assert "GRPO from tiny-chat on" not in printed
    assert not {"grpo_training_s", "grpo_evaluation_s"} & set(summary["timings_s"])
    assert_consistent_reinforcement(summary, read, trained=(SFT_GRPO,))


def test_the_simulated_loop_refuses_the_reinforcement_method_saying_which_loop_trains_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "--loop", "--method", "reinforcement", "--out", str(tmp_path)])

    assert code == 2
    assert "--method reinforcement goes with --loop --real" in capsys.readouterr().out
    assert not (tmp_path / "summary.json").exists()
