"""Preparation inputs for unit tests: a spec, run sources over scoring outputs, and the files read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME, HeldOutCase, PreparedExample
from benchgen.training.preparation import PreparationSpec, RunSource
from tests.unit.finetune_inputs import scoring_output


def make_spec(**fields: Any) -> PreparationSpec:
    values: dict[str, Any] = {
        "environment_id": "gsm8k",
        "environment_version": "1",
        "method": "demonstration",
        "run_ids": ["run-1"],
    }
    return PreparationSpec.model_validate(values | fields)


def run_source(
    root: Path, run_id: str, verdicts: list[dict[str, Any]], *, model: str = "Qwen2.5-7B-LoRA"
) -> RunSource:
    """A run on gsm8k version 1 whose scoring output holds ``verdicts``."""
    root.mkdir(parents=True, exist_ok=True)
    output = scoring_output(root / f"{run_id}-scoring_output.zip", verdicts)
    return RunSource(
        run_id=run_id, model=model, environment_id="gsm8k", environment_version="1", scoring_output=output
    )


def read_examples(out_dir: Path) -> list[PreparedExample]:
    text = (out_dir / EXAMPLES_NAME).read_text(encoding="utf-8")
    return [PreparedExample.model_validate_json(line) for line in text.splitlines()]


def read_held_out(out_dir: Path) -> list[HeldOutCase]:
    text = (out_dir / HELD_OUT_NAME).read_text(encoding="utf-8")
    return [HeldOutCase.model_validate_json(line) for line in text.splitlines()]
