"""Short English word problems a small model can learn: one or two operations, every number under 100.

They have GSM8K's shape (a story, a question, a whole-number answer) at a size where a 135M-parameter
model gets a fifth of them right out of the box and can be taught more, which the real loop needs to
show anything. Every operand, intermediate result and answer is below 100, and the steps are joined by
the connectors the finetune augmentation rewords ("then", "after that", "also", "in addition").
"""

from __future__ import annotations

import random
from collections.abc import Callable

from examplegen.math_problems import NAMES, Problem

LIMIT = 100  # every number a problem shows or computes is below this

THINGS = [
    "marbles",
    "stickers",
    "apples",
    "books",
    "cards",
    "pencils",
    "shells",
    "coins",
    "stamps",
    "cookies",
]
CONTAINERS = ["boxes", "bags", "baskets", "jars", "packs", "trays"]


Step = tuple[int, str, int, int]  # a, operator, b, result


def _steps(steps: tuple[Step, ...]) -> Callable[[int], str]:
    """The worked steps ``a op b = result``, the last one ending in the value it is given (a slip's)."""

    def explain(final: int) -> str:
        shown = [f"{a} {op} {b} = {result}." for a, op, b, result in steps[:-1]]
        a, op, b, _ = steps[-1]
        return " ".join([*shown, f"{a} {op} {b} = {final}."])

    return explain


def _problem(question: str, domain: str, steps: tuple[Step, ...], partial: int) -> Problem:
    explain = _steps(steps)
    answer = steps[-1][3]
    difficulty = "easy" if len(steps) == 1 else "medium"
    return Problem(question, answer, explain(answer), domain, difficulty, partial, explain, None)


def _add(rng: random.Random) -> Problem:
    name, thing = rng.choice(NAMES["en"]), rng.choice(THINGS)
    a = rng.randint(5, 70)
    b = rng.randint(2, LIMIT - 1 - a)
    question = f"{name} has {a} {thing}, then gets {b} more. How many {thing} does {name} have now?"
    return _problem(question, "addition", ((a, "+", b, a + b),), a)


def _subtract(rng: random.Random) -> Problem:
    name, thing = rng.choice(NAMES["en"]), rng.choice(THINGS)
    a = rng.randint(12, LIMIT - 1)
    b = rng.randint(2, a - 2)
    question = (
        f"{name} had {a} {thing} and then gave {b} of them away. How many {thing} does {name} have left?"
    )
    return _problem(question, "subtraction", ((a, "-", b, a - b),), a)


def _multiply(rng: random.Random) -> Problem:
    thing, container = rng.choice(THINGS), rng.choice(CONTAINERS)
    each = rng.randint(2, 12)
    count = rng.randint(2, min(9, (LIMIT - 1) // each))
    question = f"Each of {count} {container} holds {each} {thing}. How many {thing} are there in all?"
    return _problem(question, "multiplication", ((count, "×", each, count * each),), count)


def _divide(rng: random.Random) -> Problem:
    name, thing = rng.choice(NAMES["en"]), rng.choice(THINGS)
    people = rng.randint(2, 9)
    each = rng.randint(2, (LIMIT - 1) // people)
    total = people * each
    question = (
        f"{name} shares {total} {thing} equally among {people} friends. "
        f"How many {thing} does each friend get?"
    )
    return _problem(question, "division", ((total, "÷", people, each),), total)


def _add_subtract(rng: random.Random) -> Problem:
    name, thing = rng.choice(NAMES["en"]), rng.choice(THINGS)
    a = rng.randint(5, 60)
    b = rng.randint(2, LIMIT - 1 - a)
    c = rng.randint(2, a + b - 1)
    question = (
        f"{name} had {a} {thing}, then bought {b} more, and after that gave {c} to a friend. "
        f"How many {thing} does {name} have now?"
    )
    return _problem(question, "two steps", ((a, "+", b, a + b), (a + b, "-", c, a + b - c)), a + b)


def _multiply_add(rng: random.Random) -> Problem:
    name, thing, container = rng.choice(NAMES["en"]), rng.choice(THINGS), rng.choice(CONTAINERS)
    each = rng.randint(2, 10)
    count = rng.randint(2, min(8, (LIMIT - 10) // each))
    product = count * each
    extra = rng.randint(1, LIMIT - 1 - product)
    question = (
        f"{name} buys {count} {container} of {each} {thing} each, and also finds {extra} more {thing}. "
        f"How many {thing} does {name} have?"
    )
    return _problem(
        question, "two steps", ((count, "×", each, product), (product, "+", extra, product + extra)), product
    )


def _multiply_subtract(rng: random.Random) -> Problem:
    thing, container = rng.choice(THINGS), rng.choice(CONTAINERS)
    each = rng.randint(3, 12)
    count = rng.randint(2, min(8, (LIMIT - 1) // each))
    product = count * each
    taken = rng.randint(1, product - 1)
    question = (
        f"There are {count} {container} with {each} {thing} in each, and then {taken} {thing} are taken out. "
        f"How many {thing} are left?"
    )
    return _problem(
        question, "two steps", ((count, "×", each, product), (product, "-", taken, product - taken)), product
    )


def _add_add(rng: random.Random) -> Problem:
    name = rng.choice(NAMES["en"])
    a, b = rng.randint(5, 40), rng.randint(2, 40)
    c = rng.randint(1, LIMIT - 1 - a - b)
    question = (
        f"{name} read {a} pages on Monday, {b} pages on Tuesday, and in addition {c} pages on Wednesday. "
        f"How many pages did {name} read in the three days?"
    )
    return _problem(question, "two steps", ((a, "+", b, a + b), (a + b, "+", c, a + b + c)), a + b)


TEMPLATES: list[Callable[[random.Random], Problem]] = [
    _add,
    _subtract,
    _multiply,
    _divide,
    _add_subtract,
    _multiply_add,
    _multiply_subtract,
    _add_add,
]


def make_arithmetic_problem(rng: random.Random) -> Problem:
    return rng.choice(TEMPLATES)(rng)
