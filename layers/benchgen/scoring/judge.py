"""The ``judge`` template: a model grades each answer against the case's rubric.

A case carries a ``rubric``, criteria each with a description, a scale and a weight, and optionally a
``reference`` answer. The environment names the judge model (``judge:`` in ``competition.yaml``, see
:class:`benchgen.judging.JudgeSettings`) and may give its own judging prompt, which may name the fields in
``PROMPT_FIELDS``.

The judge answers with one JSON object and nothing else (one ```json fence around it is allowed)::

    {"criteria": [{"id": "<criterion id>", "score": <integer>, "reason": "<one sentence>"}]}

with every criterion of the rubric exactly once, each score an integer on the criterion's scale and each
reason one line of at most ``REASON_LIMIT`` characters. Anything else cannot be read: the judge is asked once
more, told what was wrong, and an answer that still cannot be read leaves the case unjudged.

A criterion's scale is ``[low, high]`` integers, ``[0, 1]`` (fails / meets it) when not given; it passes at
``pass_at`` or above, the upper half of its scale by default. A criterion's score is its place on the scale,
from 0 to 1; a case's score is the weighted mean of its criteria's scores.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Annotated

import msgspec

from benchgen.cases import Case
from benchgen.judging import JudgeSettings
from benchgen.scoring.rubrics import (
    DEFAULT_PROMPT,
    NO_REFERENCE,
    PROMPT_FIELDS,
    REASON_LIMIT,
    SCALE_LIMIT,
    CriterionScore,
    described,
    place,
    read_rubric_scores,
    rubric_answer_form,
    rubric_prompt,
    rubric_score,
)

__all__ = [
    "ASKS",
    "DEFAULT_PROMPT",
    "NO_REFERENCE",
    "PROMPT_FIELDS",
    "REASON_LIMIT",
    "SCALE_LIMIT",
    "CriterionScore",
    "JudgeCase",
    "RubricCriterion",
    "answer_form",
    "case_score",
    "check_prompt",
    "parse_judgment",
    "render_prompt",
]


class RubricCriterion(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One criterion of a case's rubric."""

    id: Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
    description: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]
    scale: tuple[int, int] = (0, 1)
    weight: Annotated[float, msgspec.Meta(gt=0, le=1000)] = 1.0
    pass_at: int | None = None

    def __post_init__(self) -> None:
        low, high = self.scale
        if not 0 < high - low <= SCALE_LIMIT:
            raise ValueError(
                f"criterion {self.id!r}: its scale [{low}, {high}] must go up, by at most {SCALE_LIMIT}"
            )
        if self.pass_at is not None and not low <= self.pass_at <= high:
            raise ValueError(
                f"criterion {self.id!r}: pass_at {self.pass_at} is outside its scale [{low}, {high}]"
            )

    @property
    def threshold(self) -> int:
        """The lowest score that passes: ``pass_at``, else the upper half of the scale."""
        low, high = self.scale
        return self.pass_at if self.pass_at is not None else low + (high - low + 1) // 2

    def norm(self, score: int) -> float:
        """``score``'s place on the scale, from 0 (its lowest) to 1 (its highest)."""
        return place(self, score)

    def described(self) -> str:
        """The criterion as the judging prompt lists it."""
        return described(self)


class JudgeCase(Case, kw_only=True):
    """A case of the judge template: a question, its rubric and an optional reference answer."""

    rubric: list[RubricCriterion] = msgspec.field(default_factory=list)
    reference: str | None = None

    def __post_init__(self) -> None:
        if not self.rubric:
            raise ValueError("a judged case needs a rubric: a list of criteria with id and description")
        ids = [criterion.id for criterion in self.rubric]
        repeated = sorted({name for name in ids if ids.count(name) > 1})
        if repeated:
            raise ValueError(f"the rubric names criteria more than once: {', '.join(repeated)}")


def answer_form(case: JudgeCase) -> str:
    """The form the judge must answer in, added after every judging prompt."""
    return rubric_answer_form(case.rubric)


def check_prompt(prompt: str) -> str | None:
    """Why a bundle's own judging prompt cannot be used (None when it can): it must name ``{answer}`` and
    ``{rubric}``, and no field but those in ``PROMPT_FIELDS``."""
    try:
        named = {name for _, name, _, _ in string.Formatter().parse(prompt) if name is not None}
    except ValueError as error:
        return f"the judging prompt is not a valid template ({error}); write a literal brace as {{{{ or }}}}"
    unknown = sorted(named - set(PROMPT_FIELDS))
    if unknown:
        return f"the judging prompt names {', '.join(unknown)}; it may name only {', '.join(PROMPT_FIELDS)}"
    missing = [name for name in ("answer", "rubric") if name not in named]
    if missing:
        return f"the judging prompt must name {{{'}, {'.join(missing)}}} so the judge sees what it grades"
    return None


def render_prompt(case: JudgeCase, answer: str, settings: JudgeSettings, problem: str | None = None) -> str:
    """The judge's prompt about ``answer`` to ``case``: the environment's prompt (or the default) with the
    case's fields, then the answer form; when ``problem`` is given, what was wrong with its last answer."""
    return rubric_prompt(settings.prompt, case.question, answer, case.reference, case.rubric, problem)


def parse_judgment(text: str, case: JudgeCase) -> list[CriterionScore] | str:
    """The judge's scores of ``case``'s rubric in rubric order, read strictly from its answer ``text``; a
    string saying what is wrong when the answer cannot be read."""
    return read_rubric_scores(text, case.rubric)


def case_score(case: JudgeCase, scores: Sequence[CriterionScore]) -> float:
    """The weighted mean of the criteria's places on their scales."""
    return rubric_score(case.rubric, scores)


class RubricRequests:
    """How the judge template asks its judge (the template's ``asks``)."""

    prompt_fields: tuple[str, ...] = PROMPT_FIELDS

    def prompt(self, case: Case, answer: str, settings: JudgeSettings, problem: str | None = None) -> str:
        assert isinstance(case, JudgeCase)
        return render_prompt(case, answer, settings, problem)

    def problem(self, case: Case, text: str) -> str | None:
        assert isinstance(case, JudgeCase)
        parsed = parse_judgment(text, case)
        return parsed if isinstance(parsed, str) else None


ASKS = RubricRequests()
