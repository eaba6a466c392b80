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

A case graded by a model against its rubric (the ``judge`` template: its grading fields hold ``judging``,
the model's id, sampling and prompt) is asked about as a run asks its judge: the same prompt text, once
more when the answer cannot be read, the same strict parse and the same weighted mean of the criteria's
places on their scales (:mod:`benchgen.scoring.rubrics`). The model is an OpenAI-compatible chat
completions endpoint named where the grader runs, never in the package: ``BENCHGEN_JUDGE_URL`` (its base
URL, such as ``http://host:8000/v1``), ``BENCHGEN_JUDGE_MODEL`` (the model id it serves; the environment's
judge's id when not set), ``BENCHGEN_JUDGE_API_KEY`` (sent as a bearer token when set) and
``BENCHGEN_JUDGE_TIMEOUT`` (seconds a call may take, 60 by default, at most 300). An answer the judge could
not give in readable form, or a call that timed out, was throttled or met a server error, gives no reward
(None, which TRL's GRPOTrainer leaves out of the group's baseline); a call the endpoint refuses otherwise
raises, saying what to fix.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchgen.scoring.math_answer import judge_answer
from benchgen.scoring.patch import TEST_TIME_LIMIT, patch_and_test
from benchgen.scoring.qa_answer import acceptable_answers, best_scores
from benchgen.scoring.reasoning import answer_text
from benchgen.scoring.routing_answer import gold_route, read_route, right_route
from benchgen.scoring.rubrics import (
    ASKED_TIMES,
    RubricLine,
    read_rubric_scores,
    rubric_lines,
    rubric_prompt,
    rubric_score,
)

_PYTHON_NAMES = re.compile(r"^python(3(\.\d+)?)?$")
GRADING = "grading"  # the key of a training row that holds the case's grading fields
ASKED = "judging"  # the key of a case's grading fields naming the model that grades it against its rubric
JUDGE_URL = "BENCHGEN_JUDGE_URL"
JUDGE_MODEL = "BENCHGEN_JUDGE_MODEL"
JUDGE_API_KEY = "BENCHGEN_JUDGE_API_KEY"
JUDGE_TIMEOUT = "BENCHGEN_JUDGE_TIMEOUT"
DEFAULT_JUDGE_TIMEOUT = 60.0
MAX_JUDGE_TIMEOUT = 300.0
_CHAT_PATH = "/chat/completions"
_SAMPLING = ("temperature", "max_tokens", "top_p", "stop")
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
    if fields.get(ASKED) is not None:
        return str(template), _checked_asked(fields)
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


def _checked_asked(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    """The grading fields of a case a model grades against its rubric, once they hold what asking needs."""
    if not isinstance(fields[ASKED], Mapping):
        raise ValueError(
            f"grading field {ASKED!r} is an object: the grading model's model_id, sampling, prompt"
        )
    if not isinstance(fields.get("question"), str):
        raise ValueError("grading fields of a case graded against its rubric need 'question', a string")
    if fields.get("reference") is not None and not isinstance(fields["reference"], str):
        raise ValueError("grading field 'reference' is a string when given")
    rubric_lines(fields.get("rubric"))
    for name in ("model_id", "prompt"):
        if fields[ASKED].get(name) is not None and not isinstance(fields[ASKED][name], str):
            raise ValueError(f"grading field {ASKED}.{name} is a string when given")
    if fields[ASKED].get("sampling") is not None and not isinstance(fields[ASKED]["sampling"], Mapping):
        raise ValueError(f"grading field {ASKED}.sampling is an object when given")
    return fields


def score(fields: Mapping[str, Any] | str, completion: str | None) -> float | None:
    """The reward in [0, 1] of ``completion`` for the case whose grading fields are ``fields``; None when
    the case's grading model gave no readable judgment of it."""
    template, fields = checked_fields(fields)
    text = answer_text(completion)
    if text is None:
        return 0.0
    if fields.get(ASKED) is not None:
        return asked_score(fields, text)
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


def _timeout() -> float:
    given = os.environ.get(JUDGE_TIMEOUT)
    if not given:
        return DEFAULT_JUDGE_TIMEOUT
    try:
        seconds = float(given)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= MAX_JUDGE_TIMEOUT:
        raise ValueError(
            f"{JUDGE_TIMEOUT} is {given!r}: give the seconds a call may take, above 0, at most 300"
        )
    return seconds


def _endpoint() -> str:
    """The chat completions URL of the grading model, from ``BENCHGEN_JUDGE_URL``."""
    base = os.environ.get(JUDGE_URL, "").strip()
    if not base.startswith(("http://", "https://")):
        raise ValueError(
            f"set {JUDGE_URL} to the http(s) base URL of the OpenAI-compatible endpoint serving the grading "
            f"model (such as http://localhost:8000/v1), and {JUDGE_API_KEY} if it needs a key"
        )
    base = base.rstrip("/")
    return base if base.endswith(_CHAT_PATH) else base + _CHAT_PATH


def _transient(error: Exception) -> bool:
    """Whether a failed call may answer when asked later (the reward is then left out, not the training)."""
    if isinstance(error, urllib.error.HTTPError):
        return error.code == 429 or error.code >= 500
    if isinstance(error, urllib.error.URLError):
        return isinstance(error.reason, TimeoutError)
    return isinstance(error, TimeoutError)


def _ask(url: str, settings: Mapping[str, Any], prompt: str) -> str | None:
    """The grading model's answer to ``prompt``: one chat completion (None when the call failed for a
    while: timed out, throttled, a server error); raises when the endpoint refuses the request."""
    model = os.environ.get(JUDGE_MODEL) or settings.get("model_id")
    if not model:
        raise ValueError(f"set {JUDGE_MODEL} to the id of the grading model the endpoint serves")
    sampling = settings.get("sampling") or {}
    body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    body.update({name: sampling[name] for name in _SAMPLING if sampling.get(name) is not None})
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(JUDGE_API_KEY)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers=headers)  # noqa: S310 - http(s) only
    try:
        with urllib.request.urlopen(request, timeout=_timeout()) as response:  # noqa: S310 - http(s) only
            answer = json.loads(response.read())
    except (urllib.error.URLError, TimeoutError) as error:
        if _transient(error):
            return None
        raise RuntimeError(f"the grading model at {url} refused the request: {error}") from None
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise RuntimeError(f"the grading model at {url} did not answer a chat completion") from None
    return content if isinstance(content, str) else ""


def asked_score(fields: Mapping[str, Any], text: str) -> float | None:
    """The score the case's grading model gives the answer ``text`` against the case's rubric: the weighted
    mean of its criteria's places on their scales, or None when its answer could not be read after
    ``ASKED_TIMES`` askings, or no answer came."""
    rubric: list[RubricLine] = rubric_lines(fields["rubric"])
    settings = fields[ASKED]
    url = _endpoint()
    problem = None
    for _ in range(ASKED_TIMES):
        prompt = rubric_prompt(
            settings.get("prompt"), fields["question"], text, fields.get("reference"), rubric, problem
        )
        reply = _ask(url, settings, prompt)
        if reply is None:
            return None
        read = read_rubric_scores(reply, rubric)
        if not isinstance(read, str):
            return rubric_score(rubric, read)
        problem = read
    return None


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


def grade(sample: Mapping[str, Any], item: Mapping[str, Any]) -> float | None:
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
) -> list[float | None]:
    """TRL's reward function: one reward per completion, ``grading`` the column of grading fields (None:
    no reward, a judgment that could not be had)."""
    if len(completions) != len(grading):
        raise ValueError(f"{len(completions)} completions for {len(grading)} rows of grading fields")
    return [score(fields, _text(completion)) for completion, fields in zip(completions, grading, strict=True)]
