"""A model that judges answers: the environment's ``judge:`` settings, what a template that asks a judge
defines, and the judgments a judging pass leaves for scoring to read.

A template that asks a model to judge (its definition's ``asks``, a :class:`JudgeRequests`) turns each case
and its answer into a prompt and says of each answer the judge gives whether it can be read. The judging
pass asks the judge model through the live-run inference path
(:func:`benchgen.inference.judge_calls.judge_one`, which asks once more, with what was wrong, when an answer
cannot be read), and writes one :class:`JudgeRecord` a case, in case order, to ``judgments.jsonl``.
Scoring reads each case's record through ``ScoringOptions.judgments``: the judge template itself never
calls a model, so scoring a judged run stays as deterministic and bounded as scoring a ruled one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

import msgspec
from pydantic import ConfigDict, Field

from benchgen.cases import Case
from benchgen.lazy_model import LazyModel
from benchgen.vocabulary import DEFAULT_BATCH_ABOVE_CASES, InferenceMode, Sampling

JUDGMENTS_NAME = "judgments.jsonl"
# The judge a judging pass asks, as its Plan found it, among the pass's working files.
JUDGE_NAME = "judge.json"
# A judge grades; it need not write much, and the same answer judged twice should be judged the same.
JUDGE_SAMPLING = Sampling.model_construct(temperature=0.0, max_tokens=512)
# How many times the judge is asked about one answer: once, and once more when its answer cannot be read.
JUDGE_ATTEMPTS = 2


class JudgeSettings(LazyModel):
    """The ``judge:`` section of ``competition.yaml``: the model that judges the answers and how it is asked.

    ``connection`` names a connection of the environment owner's by its name (what a published bundle can
    know: each owner creates their own under that name) or by its id.
    ``calibration`` is the path in the bundle of its human-labelled answers (one JSON object a line: a
    case's fields, an ``answer`` and ``labels``, a person's score per criterion id), which the judge is
    measured on. ``prompt`` replaces the template's own judging prompt (the fields it may use are the
    template's: see its ``prompt_fields``), and the form the judge must answer in is always added after it,
    so that its answers are read the same strict way whatever the prompt says. ``family`` is the judge
    model's family (``llama``, ``smollm``...), read from ``model_id`` when it is not given: a judge of the
    judged model's own family is flagged. ``inference_mode`` and ``batch_above_cases`` decide, as a live
    run's do, whether a big run's judging goes to the provider's batch inference.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    connection: str = Field(min_length=1, max_length=128)
    model_id: str | None = Field(default=None, min_length=1, max_length=256)
    sampling: Sampling = JUDGE_SAMPLING
    prompt: str | None = Field(default=None, min_length=1, max_length=20_000)
    family: str | None = Field(default=None, min_length=1, max_length=64)
    calibration: str | None = Field(default=None, min_length=1, max_length=1024)
    inference_mode: InferenceMode = InferenceMode.AUTO
    batch_above_cases: int = Field(default=DEFAULT_BATCH_ABOVE_CASES, ge=1)

    @property
    def judge_family(self) -> str | None:
        """The judge model's family: ``family`` as given, else read from ``model_id``."""
        return self.family.lower() if self.family else model_family(self.model_id)


# A family's markers in model ids, as providers write them (lower case): the first family found names it.
_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("llama", ("llama",)),
    ("claude", ("claude", "anthropic.")),
    ("gpt", ("gpt-", "gpt4", "openai/", "o1-", "o3-", "o4-")),
    ("mistral", ("mistral", "mixtral", "ministral")),
    ("qwen", ("qwen",)),
    ("gemma", ("gemma",)),
    ("smollm", ("smollm",)),
    ("nova", ("amazon.nova", "nova-")),
    ("titan", ("amazon.titan", "titan-")),
    ("deepseek", ("deepseek",)),
    ("phi", ("phi-", "phi3", "phi4")),
    ("command", ("cohere.command", "command-r")),
)


def model_family(model_id: str | None) -> str | None:
    """The family of a provider's model id (``meta.llama3-1-8b-instruct-v1:0`` is ``llama``); None when
    no known family's marker is in it."""
    if not model_id:
        return None
    model = model_id.lower()
    return next((family for family, markers in _FAMILIES if any(marker in model for marker in markers)), None)


def family_check(judge: JudgeSettings, side: str, *names: str | None) -> tuple[bool | None, str | None]:
    """Whether ``judge`` is of the family of the ``side`` model (which favours its own kind's answers),
    that model's family read from the first of ``names`` that tells it (a model id, a submission's model
    name; a trained model's own id, then its base model's, whose family it is of). When either family
    cannot be told: None, and a sentence saying which, for the reader to know it was not checked."""
    if judge.judge_family is None:
        given = f"its model id {judge.model_id!r}" if judge.model_id else "no model id"
        return None, (
            f"the judge's family cannot be told from {given} (give it as the judge's family): whether it "
            "favours a model of its own family is not known"
        )
    judged = next((family for family in map(model_family, names) if family is not None), None)
    if judged is None:
        told = " or ".join(repr(name) for name in names if name) or "no model name"
        return None, (
            f"the {side} model's family cannot be told from {told}: whether the judge favours its answers "
            "is not known"
        )
    return judge.judge_family == judged, None


class JudgeAttempt(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One answer of the judge about one case: its text as given, and why it could not be read (None: it
    was read). ``input_tokens`` / ``output_tokens``: what the provider counted, when it said."""

    text: str
    problem: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class JudgeRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the judge said about one case: its answers in the order they were asked (at most
    ``JUDGE_ATTEMPTS``), or ``error``, why no answer came (the call kept failing or timed out)."""

    id: str
    attempts: list[JudgeAttempt] = msgspec.field(default_factory=list)
    error: str | None = None

    @property
    def read(self) -> JudgeAttempt | None:
        """The answer that could be read, if one could."""
        last = self.attempts[-1] if self.attempts else None
        return last if last is not None and last.problem is None else None


class JudgeRequests(Protocol):
    """What a template that asks a model to judge defines (its definition's ``asks``)."""

    #: The fields a bundle's own judging prompt may name, as ``{field}``.
    prompt_fields: tuple[str, ...]

    def prompt(self, case: Case, answer: str, settings: JudgeSettings, problem: str | None = None) -> str:
        """The judge's prompt about ``answer`` to ``case``; ``problem``: why its last answer could not be
        read, when it is asked again."""
        ...

    def problem(self, case: Case, text: str) -> str | None:
        """Why the judge's answer ``text`` about ``case`` cannot be read (one sentence); None if it can."""
        ...


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(JudgeRecord)


def write_judgments(path: Path, records: Iterable[JudgeRecord]) -> int:
    """Write ``records`` to ``path``, one JSON line each; how many were written."""
    count = 0
    with path.open("wb") as out:
        for record in records:
            out.write(_encoder.encode(record) + b"\n")
            count += 1
    return count


def iter_judgments(path: Path) -> Iterator[JudgeRecord]:
    """The records of a ``judgments.jsonl`` file, in its order."""
    with path.open("rb") as lines:
        for line in lines:
            if line.strip():
                yield _decoder.decode(line)


def read_judgments(path: Path) -> dict[str, JudgeRecord]:
    """The records of a ``judgments.jsonl`` file by case id (the first record of an id wins)."""
    found: dict[str, JudgeRecord] = {}
    for record in iter_judgments(path):
        found.setdefault(record.id, record)
    return found
