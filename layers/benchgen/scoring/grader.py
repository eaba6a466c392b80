"""The reward of a completion from a case's grading fields, in the standard library alone.

:func:`score` is what :func:`benchgen.scoring.reward.reward` computes through the template's judge, here
from the same rule modules the judges use, so that it runs where BenchGen is not installed: the standalone
grader (:func:`benchgen.scoring.reward.grader_source`) is this module and those it imports, as one file.

- ``math``: 1.0 when the final answer equals the gold value, else 0.0 (hedged answers are wrong).
- ``qa``: the token F1 of the answer against the best gold answer; 1.0 is an exact match after
  normalisation, a partial value the share of words in common. On an unanswerable case (no gold answer) an
  empty answer is 1.0 and any other 0.0.
- ``routing``: 1.0 when the answer names the case's route, else 0.0. The route's cost is not in the
  reward: the right route is never dearer than itself, and crediting a cheaper wrong route would teach
  a policy to route everything to the cheapest target.
- ``code``: 1.0 when the answer is a unified diff that applies to the case's files and the case's tests
  then pass, else 0.0 (the template judges the tests as one command, pass or fail). Here the command
  runs in a scratch folder with this interpreter as its ``python``, a clean environment and a time limit
  of :data:`TEST_TIME_LIMIT` seconds, where a run runs it in its sandbox and runtime.

A completion is judged on the text after its reasoning block (:mod:`benchgen.scoring.reasoning`); one cut
off inside that block, or none at all, scores 0.0.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchgen.scoring.math_answer import judge_answer
from benchgen.scoring.patch import patch_and_test
from benchgen.scoring.qa_answer import acceptable_answers, best_scores
from benchgen.scoring.reasoning import answer_text
from benchgen.scoring.routing_answer import gold_route, read_route, right_route

TEST_TIME_LIMIT = 600  # seconds for one code case's test command, a run's default
_PYTHON_NAMES = re.compile(r"^python(3(\.\d+)?)?$")
GRADING = "grading"  # the key of a training row that holds the case's grading fields
# What each template needs among the grading fields, and of which JSON type.
REQUIRED: dict[str, dict[str, type]] = {
    "math": {"answer": str},
    "qa": {"answer": str},
    "routing": {"answer": str},
    "code": {},
}
OPTIONAL: dict[str, dict[str, type]] = {
    "qa": {"answers": list},
    "routing": {"route": str},
    "code": {"files": dict, "test_command": str},
}


def checked_fields(fields: Mapping[str, Any] | str) -> tuple[str, Mapping[str, Any]]:
    """The template a case's grading fields name, and the fields (given as a mapping or as its JSON);
    ValueError saying what is missing or malformed. A field given as null counts as absent, as a column
    of rows that name different fields holds them."""
    if isinstance(fields, str):
        fields = json.loads(fields)
    if not isinstance(fields, Mapping):
        raise ValueError(f"grading fields are a JSON object, not {type(fields).__name__}")
    template = fields.get("template")
    if template not in REQUIRED:
        raise ValueError(
            f"the grading fields name the template {template!r}; this grader scores {', '.join(REQUIRED)}"
        )
    for name, kind in REQUIRED[template].items():
        if not isinstance(fields.get(name), kind):
            raise ValueError(f"{template} grading fields need {name!r}, a {kind.__name__}")
    for name, kind in OPTIONAL.get(template, {}).items():
        if fields.get(name) is not None and not isinstance(fields[name], kind):
            raise ValueError(f"{template} grading field {name!r} is a {kind.__name__} when given")
    return template, fields


def score(fields: Mapping[str, Any] | str, completion: str | None) -> float:
    """The reward in [0, 1] of ``completion`` for the case whose grading fields are ``fields``."""
    template, fields = checked_fields(fields)
    text = answer_text(completion)
    if text is None:
        return 0.0
    if template == "math":
        return 1.0 if judge_answer(fields["answer"], text).passed else 0.0
    if template == "qa":
        return best_scores(acceptable_answers(fields.get("answers"), fields["answer"]), text)[1]
    if template == "code":
        command = fields.get("test_command") or ""
        outcome = patch_and_test(
            fields.get("files") or {}, text, lambda root: _run_tests(command, root), None
        )
        return 1.0 if outcome.passed else 0.0
    return 1.0 if right_route(read_route(text), gold_route(fields.get("route"), fields["answer"])) else 0.0


def _run_tests(command: str, root: Path) -> tuple[bool, str]:
    """Run a code case's test command in ``root``, without a shell; (passed, what happened)."""
    if not command:
        return False, "the case has no test_command"
    try:
        words = shlex.split(command)
    except ValueError as error:
        return False, f"the case's test_command cannot be split into words ({error}); check the quotes"
    if words and _PYTHON_NAMES.match(words[0]):
        words[0] = sys.executable
    clean = {
        "PATH": os.defpath,
        "HOME": str(root),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
    }
    try:
        done = subprocess.run(  # noqa: S603 - no shell; running the case's tests is the point
            words, cwd=root, env=clean, capture_output=True, timeout=TEST_TIME_LIMIT, check=False
        )
    except subprocess.TimeoutExpired:
        return False, f"tests timed out after {TEST_TIME_LIMIT} s"
    except OSError as error:
        return False, f"the test command cannot run: {error}"
    return (
        done.returncode == 0,
        "tests passed" if done.returncode == 0 else f"tests failed (exit {done.returncode})",
    )


def grade(sample: Mapping[str, Any], item: Mapping[str, Any]) -> float:
    """OpenAI's python grader: ``sample["output_text"]`` is the completion, ``item`` the training row."""
    if GRADING not in item:
        raise ValueError(f"the training row has no {GRADING!r} field: it holds the case's grading fields")
    return score(item[GRADING], sample.get("output_text"))


def _text(completion: str | Sequence[Mapping[str, Any]] | None) -> str | None:
    """A completion as text: itself, or a conversation's last assistant message."""
    if completion is None or isinstance(completion, str):
        return completion
    replies = [message for message in completion if message.get("role") == "assistant"]
    return replies[-1].get("content") if replies else None


def reward_func(
    completions: Sequence[str | Sequence[Mapping[str, Any]]],
    grading: Sequence[Mapping[str, Any] | str],
    **kwargs: Any,
) -> list[float]:
    """TRL's reward function: one reward per completion, ``grading`` the column of grading fields."""
    if len(completions) != len(grading):
        raise ValueError(f"{len(completions)} completions for {len(grading)} rows of grading fields")
    return [score(fields, _text(completion)) for completion, fields in zip(completions, grading, strict=True)]
