"""Finetune inputs for unit tests: a GSM8K-style folder bundle, its cases and a run's scoring output."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from benchgen.environment import Environment, open_environment
from benchgen.records.runs import RunInfo

RUN = RunInfo(
    run_id="run-1",
    environment_id="gsm8k",
    environment_version="1",
    model="Qwen2.5-7B-LoRA",
    benchmark="GSM8K",
    overall_score=0.2,
    finished_at=datetime(2026, 6, 14, 12, 0, tzinfo=UTC),
)
ARITHMETIC = {"id": "arithmetic", "description": "Computes the final number correctly"}


def case(i: int) -> dict[str, Any]:
    a, b = 10 + i, 5 + 2 * i
    answer = a + b - 3
    return {
        "id": f"gsm-{i:03d}",
        "question": f"Ali has {a} apples, then he buys {b} more. He also gives 3 away. How many are left?",
        "answer": str(answer),
        "solution": f"Ali has {a} + {b} = <<{a}+{b}={a + b}>>{a + b} apples. He gives 3 away, "
        f"so {a + b} - 3 = {answer} are left.\n#### {answer}",
        "difficulty": "easy" if i % 2 else "hard",
    }


def wrong_answer(i: int) -> str:
    return f"7777{i}"


def verdict(i: int, *, passed: bool, near_miss: bool = False) -> dict[str, Any]:
    c = case(i)
    return {
        "case_id": c["id"],
        "question": c["question"],
        "gold": c["answer"],
        "prediction": c["answer"] if passed else wrong_answer(i),
        "raw_prediction": f"The answer is {c['answer'] if passed else wrong_answer(i)}.",
        "passed": passed,
        "answered": True,
        "near_miss": near_miss,
        "score": 1.0 if passed else 0.0,
        "criteria": [{"id": "arithmetic", "passed": passed}],
        "difficulty": c["difficulty"],
    }


def make_env(
    root: Path,
    *,
    finetune: dict[str, Any] | None,
    cases: int = 50,
    pool_rows: int = 0,
    criteria: list[dict[str, str]] | None = None,
) -> Environment:
    bundle = root / "bundle"
    (bundle / "reference").mkdir(parents=True)
    spec: dict[str, Any] = {
        "version": 2,
        "title": "GSM8K",
        "template": "math",
        "tasks": [{"index": 0, "name": "math", "reference_data": "reference"}],
        "leaderboards": [{"columns": [{"title": "Accuracy", "key": "accuracy"}]}],
        "criteria": [ARITHMETIC] if criteria is None else criteria,
    }
    if finetune is not None:
        spec["finetune"] = finetune
    (bundle / "competition.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    lines = [json.dumps(case(i)) for i in range(cases)]
    (bundle / "reference" / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if pool_rows:
        pool = [
            json.dumps({"id": f"p{i}", "question": f"What is {i} + 2?", "answer": str(i + 2)})
            for i in range(pool_rows)
        ]
        (bundle / "pool.jsonl").write_text("\n".join(pool) + "\n", encoding="utf-8")
    return open_environment(bundle, root / "work")


def scoring_output(path: Path, verdicts: list[dict[str, Any]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("scores.json", json.dumps({"accuracy": 0.2}))
        archive.writestr("verdicts.jsonl", "".join(json.dumps(v) + "\n" for v in verdicts))
    return path


def forty_wrong_of_fifty() -> list[dict[str, Any]]:
    return [verdict(i, passed=i >= 40) for i in range(50)]


def jsonl(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def case_line(i: int) -> str:
    a, b = 10 + i, 5 + i % 97
    return json.dumps(
        {
            "id": f"case-{i:06d}",
            "question": f"Ali has {a} apples, then he buys {b} more. How many does he have?",
            "answer": str(a + b),
            "solution": f"Ali has {a} + {b} = {a + b} apples.\n#### {a + b}",
        }
    )


def verdict_line(i: int) -> str:
    # Every other case is wrong, so half the cases become seeds and the rest are read and left out.
    passed = i % 2 == 0
    return json.dumps(
        {
            "case_id": f"case-{i:06d}",
            "gold": str(15 + i + i % 97),
            "prediction": None if passed else "7",
            "raw_prediction": "" if passed else "The answer is 7.",
            "passed": passed,
            "answered": not passed,
            "criteria": [{"id": "arithmetic", "passed": passed}],
        }
    )


def write_large_inputs(root: Path, cases: int) -> tuple[Environment, Path]:
    """A bundle of ``cases`` cases (augmentation factor 2) and a scoring output judging every other one
    wrong, written line by line so that the inputs of a memory test cost the test no memory."""
    bundle = root / "bundle"
    (bundle / "reference").mkdir(parents=True)
    spec = {
        "version": 2,
        "title": "GSM8K",
        "template": "math",
        "tasks": [{"index": 0, "name": "math", "reference_data": "reference"}],
        "leaderboards": [{"columns": [{"title": "Accuracy", "key": "accuracy"}]}],
        "criteria": [{"id": "arithmetic", "description": "Computes the final number correctly"}],
        "finetune": {"augmentation": {"factor": 2}},
    }
    (bundle / "competition.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    with (bundle / "reference" / "cases.jsonl").open("w", encoding="utf-8") as sink:
        sink.writelines(case_line(i) + "\n" for i in range(cases))
    output = root / "scoring_output.zip"
    with (
        zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("verdicts.jsonl", "w") as sink,
    ):
        # Descending, so nothing in the build can lean on verdicts arriving in case order.
        for i in reversed(range(cases)):
            sink.write((verdict_line(i) + "\n").encode("utf-8"))
    return open_environment(bundle, root / "work"), output


def assert_memory_flat(peak_of: Callable[[Path, int], int], root: Path, small: int, large: int) -> None:
    """``peak_of(folder, cases)`` (peak bytes allocated for ``cases`` judged cases) grows well under the
    cases: ten times the cases costs under twice the memory."""
    # A warm-up first, so one-time costs (imports, caches) do not inflate the small peak.
    peak_of(root / "warm", 200)
    small_peak = peak_of(root / "small", small)
    large_peak = peak_of(root / "large", large)
    assert large_peak < 2 * small_peak, (
        f"peak {small_peak:,} B at {small:,} cases, {large_peak:,} B at {large:,} cases"
    )
