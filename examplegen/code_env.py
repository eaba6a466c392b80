"""A SWE-style code environment (``code``): tiny Python repositories with one bug and a failing test.

A case holds the files the task starts from and ``python -m unittest -q`` as its test command; the gold
``answer`` is the fixing diff. Predictions are unified diffs: some fix the bug, some apply but fix it
wrongly, some do not apply, and some are not diffs at all.
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass
from typing import Any

from examplegen.base import EnvironmentGenerator, Record, criteria, leaderboard, phase, task
from examplegen.failures import pick

TEST_COMMAND = "python -m unittest -q"


@dataclass(frozen=True)
class Bug:
    module: str
    issue: str
    source: str  # with {line} where the buggy, fixed or wrongly fixed line goes
    buggy: str
    fixed: str
    wrong: str
    tests: str
    domain: str
    difficulty: str
    hint: str  # what a model that answers in prose instead of a diff says


def _clamp(rng: random.Random) -> Bug:
    low, high = rng.randint(0, 10), rng.randint(50, 100)
    above = high + rng.randint(1, 40)
    return Bug(
        module=rng.choice(["bounds", "limits", "ranges"]),
        issue="clamp() lets values above the upper bound through.",
        source='def clamp(value, low, high):\n    """Limit value to the range [low, high]."""\n{line}\n',
        buggy="    return max(low, value)",
        fixed="    return max(low, min(value, high))",
        wrong="    return min(low, max(value, high))",
        tests=(
            f"    def test_above(self):\n        self.assertEqual(clamp({above}, {low}, {high}), {high})\n\n"
            f"    def test_below(self):\n        self.assertEqual(clamp({low - 5}, {low}, {high}), {low})\n"
        ),
        domain="numeric",
        difficulty="easy",
        hint="Use min(value, high) inside the max call.",
    )


def _average(rng: random.Random) -> Bug:
    values = [rng.randint(1, 20) * 3 for _ in range(3)]
    return Bug(
        module=rng.choice(["stats", "metrics", "summary"]),
        issue="average() returns a value that is too large.",
        source='def average(values):\n    """Arithmetic mean of a non-empty list."""\n{line}\n',
        buggy="    return sum(values) / (len(values) - 1)",
        fixed="    return sum(values) / len(values)",
        wrong="    return sum(values) / (len(values) + 1)",
        tests=f"    def test_mean(self):\n        self.assertEqual(average({values}), {sum(values) / 3})\n",
        domain="numeric",
        difficulty="easy",
        hint="The divisor should be len(values), not len(values) - 1.",
    )


def _words(rng: random.Random) -> Bug:
    words = rng.sample(["alpha", "beta", "gamma", "delta", "omega", "sigma"], k=rng.randint(2, 4))
    text = "  " + "   ".join(words) + " "
    return Bug(
        module=rng.choice(["text", "strings", "wordcount"]),
        issue="count_words() miscounts text with repeated spaces.",
        source='def count_words(text):\n    """Number of whitespace-separated words."""\n{line}\n',
        buggy='    return len(text.split(" "))',
        fixed="    return len(text.split())",
        wrong='    return len(text.strip().split(" "))',
        tests=f"    def test_spaces(self):\n        self.assertEqual(count_words({text!r}), {len(words)})\n",
        domain="strings",
        difficulty="medium",
        hint="Call split() without an argument so runs of spaces count once.",
    )


def _leap(rng: random.Random) -> Bug:
    century = rng.choice([1700, 1800, 1900, 2100])
    leap = rng.choice([1996, 2004, 2024, 2028])
    return Bug(
        module=rng.choice(["calendar_utils", "dates", "years"]),
        issue="is_leap_year() is wrong for years divisible by 400.",
        source='def is_leap_year(year):\n    """Gregorian leap year rule."""\n{line}\n',
        buggy="    return year % 4 == 0 and year % 100 != 0",
        fixed="    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
        wrong="    return year % 4 == 0",
        tests=(
            f"    def test_rules(self):\n        self.assertTrue(is_leap_year({leap}))\n"
            f"        self.assertFalse(is_leap_year({century}))\n"
            "        self.assertTrue(is_leap_year(2000))\n"
        ),
        domain="dates",
        difficulty="medium",
        hint="Add the 400-year exception: year % 400 == 0 is a leap year.",
    )


def _discount(rng: random.Random) -> Bug:
    price, percent = rng.randint(2, 40) * 10, rng.choice([10, 20, 25, 50])
    return Bug(
        module=rng.choice(["pricing", "checkout", "cart"]),
        issue="apply_discount() returns the discount instead of the discounted price.",
        source='def apply_discount(price, percent):\n    """Price after taking percent off."""\n{line}\n',
        buggy="    return price * percent / 100",
        fixed="    return price - price * percent / 100",
        wrong="    return price * (1 - percent)",
        tests=(
            "    def test_discount(self):\n"
            f"        self.assertAlmostEqual(apply_discount({price}, {percent}), "
            f"{price - price * percent / 100})\n"
        ),
        domain="business-logic",
        difficulty="easy",
        hint="Subtract the discount from the price.",
    )


def _range_sum(rng: random.Random) -> Bug:
    n = rng.randint(5, 60)
    return Bug(
        module=rng.choice(["series", "sums", "counting"]),
        issue="total_up_to(n) leaves out n itself.",
        source='def total_up_to(n):\n    """Sum of the integers 1..n."""\n{line}\n',
        buggy="    return sum(range(1, n))",
        fixed="    return sum(range(1, n + 1))",
        wrong="    return sum(range(0, n))",
        tests=f"    def test_total(self):\n        self.assertEqual(total_up_to({n}), {n * (n + 1) // 2})\n",
        domain="numeric",
        difficulty="hard",
        hint="The range must stop at n + 1.",
    )


_BUGS = [_clamp, _average, _words, _leap, _discount, _range_sum]


def _module_text(bug: Bug, line: str) -> str:
    return bug.source.replace("{line}", line)


def _function_name(bug: Bug) -> str:
    return bug.source.split("(", 1)[0].removeprefix("def ")


def _diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


class CodeEnvironment(EnvironmentGenerator):
    name = "code"
    title = "Tiny Python Bugfix"
    size = 30
    seed_offset = 4
    submission_format = "json"

    def competition(self) -> dict[str, Any]:
        description = "Each task is a tiny Python repository with one bug; submit a unified diff fixing it."
        return {
            "version": 2,
            "title": self.title,
            "description": description,
            "template": "code",
            "tasks": [task("Bugfix", description)],
            "phases": [phase("Apply each diff and run the repository's tests.")],
            "leaderboards": [
                leaderboard(
                    ("Resolved rate", "resolved_rate", "desc"),
                    ("Patch generated rate", "patch_generated_rate", "desc"),
                )
            ],
            "criteria": criteria(
                ("patch-applies", "The diff is well formed and applies to the repository."),
                ("tests-pass", "The repository's tests pass after the diff is applied."),
            ),
            "finetune": {
                "selection_criterion": "wrong_plus_augmented",
                "language": "en",
                "system_prompt": "You fix bugs in Python repositories. Reply with a unified diff only.",
                "augmentation": {
                    "factor": 2,
                    "prefixes": ["Fix the failing test.", "Write a patch for this issue:"],
                },
                "target_template": {"en": "{answer}"},
                "suggested_hyperparams": {"method": "sft", "learning_rate": 0.0001, "epochs": 2},
            },
        }

    def make_case(self, rng: random.Random, index: int, fail: bool) -> tuple[Record, Record]:
        bug = rng.choice(_BUGS)(rng)
        path = f"{bug.module}.py"
        before = _module_text(bug, bug.buggy)
        function = _function_name(bug)
        test_file = (
            f"import unittest\n\nfrom {bug.module} import {function}\n\n\n"
            f"class {function.title().replace('_', '')}Test(unittest.TestCase):\n{bug.tests}"
        )
        gold = _diff(path, before, _module_text(bug, bug.fixed))
        case_id = f"code-{index:06d}"
        case = {
            "id": case_id,
            "question": f"{bug.issue} Fix {path} so that the tests in test_{bug.module}.py pass.",
            "answer": gold,
            "files": {path: before, f"test_{bug.module}.py": test_file},
            "test_command": TEST_COMMAND,
            "difficulty": bug.difficulty,
            "domain": bug.domain,
        }
        text = self._wrong(rng, bug, path, before) if fail else gold
        return case, {"id": case_id, "prediction_text": text}

    @staticmethod
    def _wrong(rng: random.Random, bug: Bug, path: str, before: str) -> str:
        kind = pick(rng, [("wrong-fix", 45), ("does-not-apply", 20), ("prose", 20), ("truncated", 15)])
        if kind == "wrong-fix":
            return _diff(path, before, _module_text(bug, bug.wrong))
        if kind == "does-not-apply":
            # A diff written against code the repository does not have: its context lines do not match.
            stale = before.replace('"""', '"""Deprecated. ', 1)
            return _diff(path, stale, _module_text(bug, bug.fixed).replace('"""', '"""Deprecated. ', 1))
        if kind == "prose":
            return f"The bug is in {path}. {bug.hint}"
        # Cut off mid-answer: headers without a single hunk.
        return f"--- a/{path}\n+++ b/{path}\n"


# The template's example, found by examplegen.generate under the template's name.
GENERATORS = (CodeEnvironment(),)
