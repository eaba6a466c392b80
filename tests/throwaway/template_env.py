"""The throwaway template's example environment: it stands where ``examplegen/throwaway_env.py`` would."""

from __future__ import annotations

import random
from typing import Any

from examplegen.base import EnvironmentGenerator, Record, criteria, leaderboard, phase, task

COLOURS = ["red", "green", "blue", "amber", "violet", "white"]


class ThrowawayEnvironment(EnvironmentGenerator):
    name = "throwaway"
    title = "Colour Pairs"
    size = 12
    seed_offset = 7
    submission_format = "json"

    def competition(self) -> dict[str, Any]:
        description = "Name the two colours of the flag."
        return {
            "version": 2,
            "title": self.title,
            "description": description,
            "template": "throwaway",
            "tasks": [task("Colour pairs", description)],
            "phases": [phase(description)],
            "leaderboards": [
                leaderboard(
                    ("All words", "all_words_rate", "desc"),
                    ("Some words", "some_words_rate", "desc"),
                )
            ],
            "criteria": criteria(
                ("all-words", "The answer names every colour."),
                ("short-answer", "The answer names nothing else."),
            ),
            "finetune": {"augmentation": {"factor": 1}, "target_template": {"en": "{answer}"}},
        }

    def make_case(self, rng: random.Random, index: int, fail: bool) -> tuple[Record, Record]:
        first, second, other = rng.sample(COLOURS, 3)
        case_id = f"flag-{index:04d}"
        case = {"id": case_id, "question": f"Flag {index}: which colours?", "colours": [first, second]}
        text = f"{first} {other}" if fail else f"{second} and {first}"
        return case, {"id": case_id, "prediction_text": text}


GENERATORS = (ThrowawayEnvironment(),)
