"""Building the finetune artifact streams its inputs: peak memory does not grow with the number of cases."""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import yaml

from benchgen.environment import open_environment
from benchgen.finetune.artifact import build_artifact
from benchgen.runs import RunInfo

RUN = RunInfo(
    run_id="run-mem",
    environment_id="gsm8k",
    environment_version="1",
    model="Qwen2.5-7B-LoRA",
    benchmark="GSM8K",
    overall_score=0.5,
    finished_at=datetime(2026, 6, 14, 12, 0, tzinfo=UTC),
)
SMALL, LARGE = 2_000, 20_000


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


def build_peak(root: Path, cases: int) -> int:
    """Peak bytes Python allocated while building the artifact of ``cases`` judged cases."""
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
    env = open_environment(bundle, root / "work")
    tracemalloc.start()
    try:
        report = build_artifact(env, output, root / "out", run=RUN)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.example_count == cases  # half the cases wrong, each a seed plus one variant
    return peak


def test_peak_memory_stays_flat_as_cases_grow(tmp_path: Path) -> None:
    # given a warm-up build, so one-time costs (imports, caches) do not inflate the small build's peak
    build_peak(tmp_path / "warm", 200)
    # when artifacts are built from 2,000 and from 20,000 judged cases
    small = build_peak(tmp_path / "small", SMALL)
    large = build_peak(tmp_path / "large", LARGE)
    # then ten times the cases costs well under twice the memory
    assert large < 2 * small, f"peak {small:,} B at {SMALL:,} cases, {large:,} B at {LARGE:,} cases"
