"""``arithmetic-en``: the benchmark of the real loop, word problems a small model can learn.

It is scored like ``gsm8k-en`` (the ``math`` template, answers ``#### <n>``) and its submission errs the
same ways, but its problems take one or two operations on numbers under 100 (``arithmetic_problems``), so
SmolLM2-135M-Instruct gets about a fifth right before training and has room to learn. Its training rows
carry no system prompt: a live run asks the bare question, and the rows are taught the way they are asked.
"""

from __future__ import annotations

import random
from typing import Any

from examplegen.arithmetic_problems import make_arithmetic_problem
from examplegen.math_env import MathEnvironment
from examplegen.math_problems import Problem


class ArithmeticEnvironment(MathEnvironment):
    def __init__(self) -> None:
        # The real loop's benchmark: enough cases that a third held out can decide whether training helped.
        super().__init__("en", size=450, seed_offset=6)
        self.name = "arithmetic-en"
        self.title = "Arithmetic-EN"

    def description(self) -> str:
        return (
            "Word problems in English of one or two operations on numbers under 100; final answers are "
            "compared as numbers."
        )

    def problem(self, rng: random.Random) -> Problem:
        return make_arithmetic_problem(rng)

    def case_id(self, index: int) -> str:
        return f"arith-{index:06d}"

    def finetune(self) -> dict[str, Any]:
        return {
            "selection_criterion": "wrong_plus_augmented",
            "language": "en",
            "augmentation": {
                # The seed and one variant: about 400 training rows from the 450 cases' mistakes, which
                # one epoch on a CPU trains in minutes.
                "factor": 2,
                "connectors": [["then", "after that"], ["also", "in addition"]],
                "prefixes": ["Solve this problem.", "Answer the question:"],
                "suffixes": ["Give the final answer after '####'."],
            },
            "target_template": {"en": "{reasoning}\n#### {answer}"},
            "suggested_hyperparams": {"method": "sft", "learning_rate": 0.0001, "epochs": 1, "batch_size": 8},
        }
