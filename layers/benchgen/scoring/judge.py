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

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from benchgen.cases import Case
from benchgen.judging import JudgeSettings

REASON_LIMIT = 300
SCALE_LIMIT = 100  # the widest scale a criterion may have: high - low
PROMPT_FIELDS = ("question", "answer", "reference", "rubric")
_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL)

DEFAULT_PROMPT = """You are grading an answer to a question against a rubric.

Question:
{question}

Reference answer (a good answer, not the only one):
{reference}

Answer to grade:
{answer}

Rubric: score the answer on each criterion.
{rubric}"""

NO_REFERENCE = "(none given)"


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
        low, high = self.scale
        return (score - low) / (high - low)

    def described(self) -> str:
        """The criterion as the judging prompt lists it."""
        low, high = self.scale
        if (low, high) == (0, 1):
            how = "score 1 if the answer meets it, 0 if it does not"
        else:
            how = f"score an integer from {low} (worst) to {high} (best)"
        return f"- {self.id}: {self.description} ({how})"


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


@dataclass(frozen=True)
class CriterionScore:
    """The judge's score of one criterion, and its reason."""

    id: str
    score: int
    reason: str


def answer_form(case: JudgeCase) -> str:
    """The form the judge must answer in, added after every judging prompt."""
    example = {"criteria": [{"id": c.id, "score": c.scale[1], "reason": "one sentence"} for c in case.rubric]}
    return (
        "Reply with only a JSON object, no other text, in this form, one entry per criterion in the order "
        "above, each score an integer on that criterion's scale and each reason one sentence:\n"
        + json.dumps(example, ensure_ascii=False)
    )


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
    fields = {
        "question": case.question,
        "answer": answer,
        "reference": case.reference or NO_REFERENCE,
        "rubric": "\n".join(criterion.described() for criterion in case.rubric),
    }
    text = (settings.prompt or DEFAULT_PROMPT).format_map(fields) + "\n\n" + answer_form(case)
    if problem is not None:
        text += f"\n\nYour last reply could not be read: {problem} Reply again with only the JSON object."
    return text


def _body(text: str) -> str:
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    return fenced.group("body").strip() if fenced else stripped


def _entry(item: Any, rubric: dict[str, RubricCriterion]) -> CriterionScore | str:
    if not isinstance(item, dict) or set(item) != {"id", "score", "reason"}:
        return 'each entry of "criteria" must be an object with exactly "id", "score" and "reason".'
    name, score, reason = item["id"], item["score"], item["reason"]
    if not isinstance(name, str) or name not in rubric:
        return f"{json.dumps(name)} is not a criterion of the rubric ({', '.join(rubric)})."
    low, high = rubric[name].scale
    if isinstance(score, bool) or not isinstance(score, int) or not low <= score <= high:
        return f'the score of "{name}" must be an integer from {low} to {high}, not {json.dumps(score)}.'
    if not isinstance(reason, str) or not reason.strip() or "\n" in reason.strip():
        return f'the reason for "{name}" must be one sentence on one line.'
    if len(reason) > REASON_LIMIT:
        return f'the reason for "{name}" is longer than {REASON_LIMIT} characters.'
    return CriterionScore(name, score, reason.strip())


def parse_judgment(text: str, case: JudgeCase) -> list[CriterionScore] | str:
    """The judge's scores of ``case``'s rubric in rubric order, read strictly from its answer ``text``; a
    string saying what is wrong when the answer cannot be read."""
    try:
        data = json.loads(_body(text))
    except ValueError:
        return "the reply is not one JSON object."
    if not isinstance(data, dict) or set(data) != {"criteria"} or not isinstance(data["criteria"], list):
        return 'the reply must be a JSON object with one key, "criteria", holding a list.'
    rubric = {criterion.id: criterion for criterion in case.rubric}
    scores: dict[str, CriterionScore] = {}
    for item in data["criteria"]:
        entry = _entry(item, rubric)
        if isinstance(entry, str):
            return entry
        if entry.id in scores:
            return f'"{entry.id}" is scored more than once.'
        scores[entry.id] = entry
    missing = [name for name in rubric if name not in scores]
    if missing:
        return f"no score is given for {', '.join(missing)}."
    return [scores[name] for name in rubric]


def case_score(case: JudgeCase, scores: Sequence[CriterionScore]) -> float:
    """The weighted mean of the criteria's places on their scales."""
    rubric = {criterion.id: criterion for criterion in case.rubric}
    total = sum(criterion.weight for criterion in case.rubric)
    return sum(rubric[s.id].weight * rubric[s.id].norm(s.score) for s in scores) / total


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

    def passes(self, case: Case, text: str) -> dict[str, bool]:
        """The judge's pass/fail per criterion from its readable answer (calibration)."""
        assert isinstance(case, JudgeCase)
        parsed = parse_judgment(text, case)
        if isinstance(parsed, str):
            return {}
        rubric = {criterion.id: criterion for criterion in case.rubric}
        return {score.id: score.score >= rubric[score.id].threshold for score in parsed}

    def labelled(self, case: Case, labels: Mapping[str, int]) -> dict[str, bool]:
        """A person's pass/fail per criterion from their scores (calibration): every criterion of the
        rubric scored once, on its scale."""
        assert isinstance(case, JudgeCase)
        rubric = {criterion.id: criterion for criterion in case.rubric}
        unknown = sorted(set(labels) - set(rubric))
        missing = [name for name in rubric if name not in labels]
        if unknown or missing:
            raise ValueError(
                f"labels must score every criterion of the rubric ({', '.join(rubric)}) and no other"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                + (f"; missing: {', '.join(missing)}" if missing else "")
            )
        for name, criterion in rubric.items():
            low, high = criterion.scale
            if not low <= labels[name] <= high:
                raise ValueError(f"the label of {name!r} must be an integer from {low} to {high}")
        return {name: labels[name] >= criterion.threshold for name, criterion in rubric.items()}


ASKS = RubricRequests()
