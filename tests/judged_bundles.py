"""A judged environment for tests: the throwaway template asking with the rubric judge's requests, its
example bundle given a ``judge:`` section and, when asked, a calibration set."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from benchgen.scoring.judge import ASKS, JudgeCase
from examplegen import generate_environment
from tests.throwaway import registered_template
from tests.throwaway import template as throwaway_template

CALIBRATION = "judge/calibration.jsonl"
RUBRIC = [
    {"id": "correct", "description": "The answer is right."},
    {"id": "polite", "description": "The answer is polite.", "scale": [1, 5]},
]


@contextmanager
def judged_template(monkeypatch: pytest.MonkeyPatch, *, rubric_cases: bool = True) -> Iterator[None]:
    """The throwaway template registered, asking a judge with the rubric template's requests, while the
    block runs; its cases read as rubric cases (as calibration reads them) unless ``rubric_cases`` is
    false (its example's cases then score as the throwaway's)."""
    with registered_template() as definition:
        case_type = JudgeCase if rubric_cases else definition.case_type
        monkeypatch.setattr(
            throwaway_template, "TEMPLATE", dataclasses.replace(definition, asks=ASKS, case_type=case_type)
        )
        yield


def labelled(index: int, correct: int, polite: int) -> dict[str, object]:
    """One labelled answer: ``answer-<index>``, with a person's scores of correct (0/1) and polite (1..5)."""
    return {
        "id": f"cal-{index}",
        "question": f"What is {index} + {index}?",
        "rubric": RUBRIC,
        "answer": f"answer-{index}",
        "labels": {"correct": correct, "polite": polite},
    }


def judged_bundle(
    out: Path, calibration: Sequence[dict[str, object]] | None, connection: str = "conn-judge"
) -> Path:
    """The throwaway example's bundle with a judge: section (model ``judge-model`` of ``connection``, by id
    or name) and, unless None, the calibration set; its folder."""
    bundle = generate_environment("throwaway", out, cases=4, seed=3).bundle_dir
    competition = bundle / "competition.yaml"
    spec = yaml.safe_load(competition.read_text(encoding="utf-8"))
    spec["judge"] = {"connection": connection, "model_id": "judge-model"}
    if calibration is not None:
        spec["judge"]["calibration"] = CALIBRATION
        (bundle / "judge").mkdir()
        lines = "".join(json.dumps(line) + "\n" for line in calibration)
        (bundle / CALIBRATION).write_text(lines, encoding="utf-8")
    competition.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return bundle


def judgment(scores: dict[str, int]) -> str:
    """A judge's readable answer giving ``scores``."""
    return json.dumps({"criteria": [{"id": k, "score": v, "reason": "Because."} for k, v in scores.items()]})
