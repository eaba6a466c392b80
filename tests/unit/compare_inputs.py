"""Scoring outputs for the comparison's unit tests: verdicts written as a run leaves them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchgen.compare.report import RunIdentity
from benchgen.verdicts import CriterionResult, Verdict
from benchgen.zipwrite import write_zip

BEFORE = RunIdentity(run_id="run-base", model="base-7b", benchmark="GSM8K", environment_id="gsm8k")
AFTER = RunIdentity(run_id="run-tuned", model="base-7b-lora", benchmark="GSM8K", environment_id="gsm8k")


def verdict(case_id: str, passed: bool, **fields: Any) -> Verdict:
    values: dict[str, Any] = {
        "question": f"question of {case_id}",
        "gold": "42",
        "prediction": "42" if passed else "41",
        "raw_prediction": f"the answer is {'42' if passed else '41'}",
        "answered": True,
        "detail": "exact match" if passed else "read 41",
        "criteria": [CriterionResult(id="final-answer", passed=passed)],
        "difficulty": "easy",
    }
    values.update(fields)
    return Verdict(case_id=case_id, passed=passed, **values)


def scoring_output(path: Path, verdicts: list[Verdict]) -> Path:
    """``path`` as a scoring_output.zip holding these verdicts in verdicts.jsonl."""
    lines = b"".join(v.model_dump_json().encode("utf-8") + b"\n" for v in verdicts)
    write_zip(path, {"verdicts.jsonl": lines, "scores.json": b"{}"})
    return path


def outcomes(path: Path, passes: dict[str, bool]) -> Path:
    """A scoring output with one plain verdict per case id, passed or not."""
    return scoring_output(path, [verdict(case_id, passed) for case_id, passed in passes.items()])


def table(fixed: int, broken: int, same_pass: int, same_fail: int) -> tuple[dict[str, bool], dict[str, bool]]:
    """Before and after outcomes with these paired counts, case ids c000, c001, ..."""
    rows = [(False, True)] * fixed + [(True, False)] * broken
    rows += [(True, True)] * same_pass + [(False, False)] * same_fail
    before = {f"c{i:03d}": first for i, (first, _) in enumerate(rows)}
    after = {f"c{i:03d}": second for i, (_, second) in enumerate(rows)}
    return before, after
