"""A reinforcement job's grader: OpenAI's python grader, ``{"type": "python", "name", "source"}``, whose
source defines ``grade(sample, item) -> float`` (``sample["output_text"]`` is the model's answer, ``item``
the training row).

The server only reads the source (:func:`check`: it parses, and defines ``grade`` at its top level); it is
run by the training process alone (:func:`reward`), which holds no API key. A grader that raises, or
returns anything but a finite number, ends the job with :class:`GraderFailed`, whose sentence names the
grader, the row and what it did: a reward silently read as 0 would train the model on a broken grader.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable
from typing import Any

# OpenAI's python grader object: "type" (always "python"), "name", "source", and an optional "image_tag"
# naming the image the grader runs in (meaningless here: it runs in the training process's Python).
GRADER_TYPE = "python"
MAX_SOURCE_CHARS = 256 * 1024


class BadGrader(ValueError):
    """A grader the server cannot use; the message says what to fix."""


class GraderFailed(RuntimeError):
    """The grader raised, or returned something other than a number, while training."""


def check(grader: Any) -> dict[str, str]:
    """``grader`` (the job's ``method.reinforcement.grader``) as ``{"name", "source"}``, once its source
    parses and defines ``grade`` at its top level; :class:`BadGrader` otherwise."""
    if not isinstance(grader, dict) or grader.get("type") != GRADER_TYPE:
        raise BadGrader(
            'method.reinforcement.grader must be a python grader: {"type": "python", "name": ..., '
            '"source": "def grade(sample, item): ..."}'
        )
    name, source = grader.get("name"), grader.get("source")
    if not isinstance(name, str) or not name.strip():
        raise BadGrader("method.reinforcement.grader.name must name the grader (a non-empty string)")
    if not isinstance(source, str) or not source.strip():
        raise BadGrader("method.reinforcement.grader.source must be the grader's Python source")
    if len(source) > MAX_SOURCE_CHARS:
        raise BadGrader(f"grader {name}'s source is over {MAX_SOURCE_CHARS:,} characters: send at most that")
    try:
        tree = ast.parse(source, filename=name)
    except SyntaxError as error:
        raise BadGrader(f"grader {name}'s source is not Python: {error.msg} at line {error.lineno}") from None
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    defined = any(isinstance(node, functions) and node.name == "grade" for node in tree.body)
    if not defined:
        raise BadGrader(
            f"grader {name} defines no grade function: its source must define grade(sample, item) returning "
            "a number, sample['output_text'] being the model's answer and item the training row"
        )
    return {"name": name, "source": source}


def reward(grader: dict[str, str]) -> Callable[..., list[float | None]]:
    """A reward function in TRL's shape (``completions`` and the dataset's ``item`` column) that asks the
    grader's ``grade`` for each completion. Runs the grader's source: call it in the training process only."""
    name = grader["name"]
    namespace: dict[str, Any] = {"__name__": f"grader_{name}"}
    try:
        exec(compile(grader["source"], name, "exec"), namespace)  # noqa: S102 - the job's own grader, in its own process
    except Exception as error:
        raise GraderFailed(f"grader {name} failed as it loaded: {type(error).__name__}: {error}") from None
    grade = namespace.get("grade")
    if not callable(grade):
        raise GraderFailed(f"grader {name} defines grade as something other than a function")

    def rewards(completions: list[Any], item: list[str], **_: Any) -> list[float | None]:
        scores: list[float | None] = []
        for completion, row in zip(completions, item, strict=True):
            text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
            try:
                score = grade({"output_text": text}, json.loads(row))
            except Exception as error:
                raise GraderFailed(
                    f"grader {name} raised {type(error).__name__}: {str(error)[:300]} on the answer "
                    f"{text[:80]!r}: fix its grade function"
                ) from None
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise GraderFailed(
                    f"grader {name} returned {score!r:.80} for the answer {text[:80]!r}: grade must return a "
                    "finite number"
                )
            scores.append(float(score))
        return scores

    rewards.__name__ = "grade"
    return rewards
