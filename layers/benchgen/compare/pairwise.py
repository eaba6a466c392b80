"""Pairwise judging of a comparison: the environment's judge says which of the base and the trained model's
answers to a case is better, asked in both orders, and how often it prefers a position.

Each pair is asked twice, the base model's answer shown first (as A) and then the trained model's. The
trained model wins a pair only when the judge prefers its answer in both orders, the base likewise; any
other pair is a tie, and a pair whose two orders disagree is an inconsistent pair, counted as a tie and
counted apart. A judge that keeps choosing whatever is shown first makes every pair inconsistent: that is
its position bias, measured over every choice it made between two answers. A pair the judge could not
answer readably in one of its orders, after its one retry, is unjudged, neither a win nor a tie.

The judge answers with one JSON object and nothing else (one ```json fence around it is allowed)::

    {"better": "A" | "B" | "tie", "reason": "<one sentence>"}
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from pydantic import Field

from benchgen.cases import Case
from benchgen.compare.stats import ALPHA, mcnemar_exact
from benchgen.inference.judge_calls import judge_one
from benchgen.inference.model import Model
from benchgen.inference.pacing import Pacer
from benchgen.inference.retry import Backoff
from benchgen.judging import JudgeRecord, JudgeSettings, family_check
from benchgen.lazy_model import LazyModel
from benchgen.scoring.rubrics import CUT_OFF_REPLY, reply_body

Better = Literal["A", "B", "tie"]
REASON_LIMIT = 300
NO_REFERENCE = "(none given)"
NO_RUBRIC = "(none given: judge which answer answers the question better)"

PAIRWISE_PROMPT = """You are comparing two answers to the same question against a rubric.

Question:
{question}

Reference answer (a good answer, not the only one):
{reference}

Rubric:
{rubric}

Answer A:
{first}

Answer B:
{second}

Which answer is better against the rubric and the reference? Judge the content only: the order the \
answers are shown in and their length say nothing about which is better. Answer "tie" when neither is \
better.

Reply with only a JSON object, no other text, in this form:
{{"better": "A" or "B" or "tie", "reason": "one sentence"}}"""

WIN_RATE_RULE = (
    "wins over judged pairs: a pair the trained model won in both orders, over every pair judged readably "
    "in both orders (ties and inconsistent pairs count as not won)"
)
SIGN_TEST_RULE = (
    "exact two-sided sign test on wins against losses (ties and inconsistent pairs left out): "
    "min(1, 2 * P[X <= min(wins, losses)]) with X ~ Bin(wins + losses, 1/2)"
)
POSITION_RULE = (
    "every answer of the judge that chose one of the two answers (not a tie), in both orders of every judged "
    "pair: the share that chose the answer shown first, with an exact two-sided binomial p against 1/2"
)
SAME_FAMILY_WARNING = "the judge is of the same family as the {side} model: it may favour its answers"


@dataclass(frozen=True)
class Preference:
    """What the judge said about one order of a pair: which answer is better (``A`` shown first), and why."""

    better: Better
    reason: str


def parse_preference(text: str) -> Preference | str:
    """The judge's preference, read strictly from its answer ``text``; a sentence saying what is wrong when
    it cannot be read."""
    body = reply_body(text)
    if body is None:
        return CUT_OFF_REPLY
    try:
        data = json.loads(body)
    except ValueError:
        return "the reply is not one JSON object."
    if not isinstance(data, dict) or set(data) != {"better", "reason"}:
        return 'the reply must be a JSON object with exactly "better" and "reason".'
    better, reason = data["better"], data["reason"]
    if better not in ("A", "B", "tie"):
        return f'"better" must be "A", "B" or "tie", not {json.dumps(better)}.'
    if not isinstance(reason, str) or not reason.strip() or "\n" in reason.strip():
        return '"reason" must be one sentence on one line.'
    if len(reason) > REASON_LIMIT:
        return f'"reason" is longer than {REASON_LIMIT} characters.'
    return Preference(better=better, reason=reason.strip())


def preference_problem(text: str) -> str | None:
    """Why the judge's answer ``text`` cannot be read; None when it can."""
    read = parse_preference(text)
    return read if isinstance(read, str) else None


def _rubric(case: Case) -> str:
    """The case's rubric as the prompt lists it: each criterion as its template describes it."""
    criteria = getattr(case, "rubric", None) or []
    lines = [item.described() if hasattr(item, "described") else str(item) for item in criteria]
    return "\n".join(lines) or NO_RUBRIC


def pairwise_prompt(case: Case, first: str, second: str, problem: str | None = None) -> str:
    """The judge's prompt comparing ``first`` (shown as A) and ``second`` (B) as answers to ``case``; when
    ``problem`` is given, what was wrong with its last answer."""
    text = PAIRWISE_PROMPT.format(
        question=case.question,
        reference=getattr(case, "reference", None) or NO_REFERENCE,
        rubric=_rubric(case),
        first=first,
        second=second,
    )
    if problem is not None:
        text += f"\n\nYour last reply could not be read: {problem} Reply again with only the JSON object."
    return text


class PairOutcome(StrEnum):
    WON = "trained model won"
    LOST = "base model won"
    TIE = "tie"
    INCONSISTENT = "inconsistent: counted as a tie"
    UNJUDGED = "unjudged"


@dataclass(frozen=True)
class PairJudgment:
    """The judge's two answers about one case: the base model's answer shown first, then the trained's."""

    case_id: str
    base_first: JudgeRecord
    tuned_first: JudgeRecord

    def preferences(self) -> tuple[Preference, Preference] | None:
        """Both orders' preferences, or None when either could not be read."""
        read = [record.read for record in (self.base_first, self.tuned_first)]
        found = [parse_preference(attempt.text) if attempt is not None else None for attempt in read]
        first, second = found
        if isinstance(first, Preference) and isinstance(second, Preference):
            return first, second
        return None

    @property
    def outcome(self) -> PairOutcome:
        both = self.preferences()
        if both is None:
            return PairOutcome.UNJUDGED
        # In the first order the trained model's answer is B, in the second it is A.
        said = (_winner(both[0].better, tuned_is="B"), _winner(both[1].better, tuned_is="A"))
        if said[0] != said[1]:
            return PairOutcome.INCONSISTENT
        return said[0]

    def records(self) -> tuple[JudgeRecord, JudgeRecord]:
        return self.base_first, self.tuned_first


def _winner(better: Better, *, tuned_is: str) -> PairOutcome:
    if better == "tie":
        return PairOutcome.TIE
    return PairOutcome.WON if better == tuned_is else PairOutcome.LOST


@dataclass(frozen=True)
class PairToJudge:
    """One held-out case with both models' answers."""

    case: Case
    base_answer: str
    tuned_answer: str


def judge_pairs(
    pairs: Iterable[PairToJudge],
    model: Model,
    backoff: Backoff,
    *,
    pacer: Pacer | None = None,
    deadline: float | None = None,
) -> list[PairJudgment]:
    """Ask the judge ``model`` about each pair in both orders, as every judge is asked (:func:`judge_one`:
    once more when its answer cannot be read); a call past ``deadline`` does not start, and leaves its pair
    unjudged with the reason."""
    judged = []
    for pair in pairs:
        case, base, tuned = pair.case, pair.base_answer, pair.tuned_answer
        base_first, tuned_first = (
            judge_one(case.id, prompt, preference_problem, model, backoff, pacer=pacer, deadline=deadline)
            for prompt in (
                functools.partial(pairwise_prompt, case, base, tuned),
                functools.partial(pairwise_prompt, case, tuned, base),
            )
        )
        judged.append(PairJudgment(case.id, base_first, tuned_first))
    return judged


class PairRow(LazyModel):
    """One pair as the report lists it: the judge's choice in each order (None: unread) and the outcome."""

    case_id: str
    outcome: PairOutcome
    base_first: Better | None
    tuned_first: Better | None
    why_unjudged: str | None = None


class PositionBias(LazyModel):
    """How often the judge chose the answer shown first, over every choice it made between two answers."""

    choices: int  # answers that chose A or B (ties left out), in both orders of every judged pair
    chose_first: int
    chose_second: int
    first_rate: float | None  # chose_first / choices; None when it never chose
    p_value: float
    prefers: Literal["first", "second"] | None  # a position it prefers, at p < alpha
    inconsistency_rate: float | None  # inconsistent pairs / judged pairs
    finding: str
    rule: str = POSITION_RULE


class JudgeUse(LazyModel):
    """What judging the pairs cost, apart from either model's tokens: the answers the judge gave (a retry
    is one more) and the tokens the provider counted for them."""

    answers: int
    input_tokens: int
    output_tokens: int


class Pairwise(LazyModel):
    """The pairwise section of a comparison."""

    judge_model: str | None
    judge_family: str | None
    asked_pairs: int  # held-out cases both models answered, each asked in both orders
    without_both_answers: list[str] = Field(default_factory=list)  # paired cases left out: an answer missing
    wins: int
    losses: int
    ties: int  # every pair that is neither won nor lost, inconsistent pairs included
    inconsistent: int
    unjudged: int
    win_rate: float | None  # wins / judged pairs
    win_rate_rule: str = WIN_RATE_RULE
    sign_p: float
    sign_test_rule: str = SIGN_TEST_RULE
    position_bias: PositionBias
    warnings: list[str] = Field(default_factory=list)
    judge_use: JudgeUse
    pairs: list[PairRow] = Field(default_factory=list)


def _position_bias(judged: Sequence[PairJudgment], inconsistent: int) -> PositionBias:
    said = [preference.better for pair in judged if (both := pair.preferences()) for preference in both]
    first, second = said.count("A"), said.count("B")
    choices = first + second
    p_value = mcnemar_exact(first, second)
    prefers: Literal["first", "second"] | None = None
    if p_value < ALPHA:
        prefers = "first" if first > second else "second"
    if choices == 0:
        finding = "the judge never chose one answer over the other, so its position bias cannot be measured"
    elif prefers is None:
        finding = (
            f"no position preference this sample can tell from chance: the judge chose the answer shown "
            f"first in {first} of {choices} choices (p = {p_value:.4g})"
        )
    else:
        shown = first if prefers == "first" else second
        finding = (
            f"the judge prefers the answer shown {prefers}: it chose it in {shown} of {choices} choices "
            f"(p = {p_value:.4g} < {ALPHA}), whatever the answer; its verdicts on single answers may lean "
            "the same way"
        )
    return PositionBias(
        choices=choices,
        chose_first=first,
        chose_second=second,
        first_rate=first / choices if choices else None,
        p_value=p_value,
        prefers=prefers,
        inconsistency_rate=inconsistent / len(judged) if judged else None,
        finding=finding,
    )


def _why_unjudged(pair: PairJudgment) -> str | None:
    for record in pair.records():
        if record.read is None:
            if record.error is not None:
                return record.error
            if record.attempts:
                return f"its answer could not be read after a retry: {record.attempts[-1].problem}"
    return None


def _row(pair: PairJudgment) -> PairRow:
    both = pair.preferences()
    reads = [parse_preference(a.text) if (a := record.read) else None for record in pair.records()]
    choices = [read.better if isinstance(read, Preference) else None for read in reads]
    return PairRow(
        case_id=pair.case_id,
        outcome=pair.outcome,
        base_first=choices[0],
        tuned_first=choices[1],
        why_unjudged=None if both is not None else _why_unjudged(pair),
    )


def _warnings(judge: JudgeSettings, base_model: str, tuned_model: str) -> list[str]:
    """A warning for each compared model of the judge's family (the trained one is of its base's family when
    its own id does not tell), and one for each family that cannot be told, said once."""
    warnings: list[str] = []
    for side, names in (("trained", (tuned_model, base_model)), ("base", (base_model,))):
        same, unknown = family_check(judge, side, *names)
        warning = SAME_FAMILY_WARNING.format(side=side) if same else unknown
        if warning is not None and warning not in warnings:
            warnings.append(warning)
    return warnings


def summarize(
    judgments: Sequence[PairJudgment],
    *,
    judge: JudgeSettings,
    base_model: str,
    tuned_model: str,
    without_both_answers: Sequence[str] = (),
) -> Pairwise:
    """The pairwise section from the answers of ``judge`` about each pair; ``base_model`` /
    ``tuned_model``: the model ids the two runs called, whose families are checked against the judge's."""
    outcomes = [pair.outcome for pair in judgments]
    wins, losses = outcomes.count(PairOutcome.WON), outcomes.count(PairOutcome.LOST)
    inconsistent = outcomes.count(PairOutcome.INCONSISTENT)
    ties = outcomes.count(PairOutcome.TIE) + inconsistent
    judged = [pair for pair in judgments if pair.outcome is not PairOutcome.UNJUDGED]
    attempts = [attempt for pair in judgments for record in pair.records() for attempt in record.attempts]
    return Pairwise(
        judge_model=judge.model_id,
        judge_family=judge.judge_family,
        asked_pairs=len(judgments),
        without_both_answers=list(without_both_answers),
        wins=wins,
        losses=losses,
        ties=ties,
        inconsistent=inconsistent,
        unjudged=outcomes.count(PairOutcome.UNJUDGED),
        win_rate=wins / len(judged) if judged else None,
        sign_p=mcnemar_exact(wins, losses),
        position_bias=_position_bias(judged, inconsistent),
        warnings=_warnings(judge, base_model, tuned_model),
        judge_use=JudgeUse(
            answers=len(attempts),
            input_tokens=sum(attempt.input_tokens or 0 for attempt in attempts),
            output_tokens=sum(attempt.output_tokens or 0 for attempt in attempts),
        ),
        pairs=[_row(pair) for pair in judgments],
    )
