"""The real loop's word problems stay small and right: every number under 100, and worked steps whose
arithmetic holds and ends in the gold answer."""

from __future__ import annotations

import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from examplegen.arithmetic_problems import LIMIT, make_arithmetic_problem

STEP = re.compile(r"(\d+) ([+\-×÷]) (\d+) = (\d+)\.")


def _compute(a: int, op: str, b: int) -> int | None:
    """What ``a op b`` is; a division that leaves a remainder has no whole answer."""
    if op == "÷":
        return a // b if a % b == 0 else None
    return {"+": a + b, "-": a - b, "×": a * b}[op]


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_every_number_a_problem_shows_or_computes_is_below_the_limit(seed: int) -> None:
    problem = make_arithmetic_problem(random.Random(seed))

    numbers = [int(n) for n in re.findall(r"\d+", f"{problem.question} {problem.solution}")]

    assert numbers
    assert all(0 < n < LIMIT for n in numbers), (problem.question, problem.solution)
    assert 0 < problem.answer < LIMIT


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_the_worked_steps_hold_and_end_in_the_answer(seed: int) -> None:
    problem = make_arithmetic_problem(random.Random(seed))

    steps = STEP.findall(problem.solution)

    assert 1 <= len(steps) <= 2, problem.solution
    for a, op, b, result in steps:
        assert _compute(int(a), op, int(b)) == int(result), problem.solution
    assert int(steps[-1][3]) == problem.answer
    # every operand but the first step's comes from the question or from the step before
    question_numbers = set(re.findall(r"\d+", problem.question))
    assert {steps[0][0], steps[0][2]} <= question_numbers


def test_a_slip_changes_only_the_last_result() -> None:
    problem = make_arithmetic_problem(random.Random(5))

    slipped = problem.explain(problem.answer + 1)

    assert slipped.endswith(f"= {problem.answer + 1}.")
    assert slipped.rsplit("=", 1)[0] == problem.solution.rsplit("=", 1)[0]
