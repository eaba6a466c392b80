"""What the training bench concludes from given figures: each phase against the first recipe's, whether a
recipe logged the same losses, and the verdict of paired held-out grades."""

from __future__ import annotations

from typing import Any

from tests.bench_scripts import bench_script

train_bench = bench_script("train_bench")


def _result(recipe: str, scale: float, losses: list[float]) -> dict[str, Any]:
    return {
        "recipe": recipe,
        "steps": len(losses),
        "tokens": 1000,
        "losses": losses,
        "eval_loss": 1.5,
        "threads": 2,
        "cores": 2,
        "epoch_s": 100.0 * scale,
        "phases_s": {phase: 10.0 * scale for phase in train_bench.PHASES},
        "calls": {"forward": len(losses), "evaluation": 1},
    }


def test_the_table_gives_each_phase_as_a_ratio_to_the_first_recipe() -> None:
    text = train_bench.table(
        [
            _result("before", 1.0, [2.0, 1.5]),
            _result("shipped", 0.75, [2.0, 1.5]),
            _result("bf16", 0.5, [2.0, 1.4]),
        ]
    )

    assert "| forward | 10.0 | 7.5 (x0.75) | 5.0 (x0.50) |" in text
    assert "| epoch | 100.0 | 75.0 (x0.75) | 50.0 (x0.50) |" in text
    assert "shipped: 2 steps, 1000 tokens, 1 evaluation(s), same losses as before" in text
    assert "bf16: 2 steps, 1000 tokens, 1 evaluation(s), losses differ from before" in text


def test_the_verdict_pairs_grades_by_case_and_tests_the_changes() -> None:
    before = {f"c{i}": i < 2 for i in range(12)}
    after = {f"c{i}": i != 0 for i in range(12)}

    found = train_bench.verdict(before, after)

    assert (found["fixed"], found["broken"]) == (10, 1)
    assert found["accuracy_before"] == 2 / 12
    assert found["accuracy_after"] == 11 / 12
    assert round(found["mcnemar_p"], 5) == 0.01172
