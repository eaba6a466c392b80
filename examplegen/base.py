"""What every generated environment provides: its ``competition.yaml``, its extra files, and case by case
the reference case together with the prediction a plausible model would make for it."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from examplegen.writing import SubmissionFormat

Record = dict[str, Any]

REFERENCE_DIR = "reference"


class EnvironmentGenerator(ABC):
    name: str
    title: str
    # Its checked-in example under examples/: how many cases, and its seed's offset from the examples' seed
    # (any number; each is the one it was first generated with, so that the bytes stay as they were).
    size: int
    seed_offset: int
    submission_format: SubmissionFormat = "json"

    @abstractmethod
    def competition(self) -> dict[str, Any]:
        """The ``competition.yaml`` document."""

    @abstractmethod
    def make_case(self, rng: random.Random, index: int, fail: bool) -> tuple[Record, Record]:
        """The reference case at ``index`` and a prediction that is wrong when ``fail`` is set."""

    def write_extras(self, bundle_dir: Path, rng: random.Random, cases: int) -> None:  # noqa: B027
        """Files besides ``competition.yaml`` and the cases (a pool dataset, a scoring program).

        Most environments have none, so this is a no-op rather than abstract."""

    def judge_reply(self, prompt: str) -> tuple[str, str] | None:
        """A simulated judge's answer to a judging prompt about one of this environment's cases, with that
        case's id; None when the prompt is about none of them (every environment but a judged one)."""
        return None

    def submission_metadata(self, rng: random.Random, cases: int) -> dict[str, Any]:
        return {
            "model": "example-model-7b",
            "execution_time": round(cases * rng.uniform(0.8, 1.6), 2),
        }


def task(name: str, description: str, **programs: str) -> dict[str, Any]:
    return {"index": 0, "name": name, "description": description, "reference_data": REFERENCE_DIR, **programs}


def phase(description: str, time_limit: int = 600) -> dict[str, Any]:
    return {
        "index": 0,
        "name": "Main",
        "description": description,
        "tasks": [0],
        "execution_time_limit": time_limit,
    }


def leaderboard(*columns: tuple[str, str, str]) -> dict[str, Any]:
    """A Codabench leaderboard; each column is ``(title, key, sorting)`` in display order."""
    return {
        "title": "Results",
        "key": "main",
        "columns": [
            {"title": title, "key": key, "index": index, "sorting": sorting, "precision": 4}
            for index, (title, key, sorting) in enumerate(columns)
        ],
    }


def criteria(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"id": ident, "description": description} for ident, description in pairs]
