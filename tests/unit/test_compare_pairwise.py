"""Pairwise judging of a comparison, with a deterministic fake judge: both orders, ties, position bias."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from math import comb
from pathlib import Path

import msgspec
import pytest

from benchgen.cases import Case
from benchgen.compare.output import write_comparison
from benchgen.compare.pairwise import (
    PairOutcome,
    PairToJudge,
    Pairwise,
    Preference,
    judge_pairs,
    pairwise_prompt,
    parse_preference,
    summarize,
)
from benchgen.compare.report import compare_runs
from benchgen.inference.model import Answer, ModelCallError
from benchgen.inference.retry import Backoff
from benchgen.judging import JudgeSettings
from tests.unit.compare_inputs import AFTER, BEFORE, outcomes, table

NO_WAIT = Backoff(attempts=1, base_s=0.0, cap_s=0.0, throttled_s=0.0)
SHOWN = re.compile(r"Answer A:\n(?P<a>.*)\n\nAnswer B:\n(?P<b>.*)\n\nWhich", re.DOTALL)


class RubricCase(Case, kw_only=True):
    rubric: list[str] = msgspec.field(default_factory=list)
    reference: str | None = None


class FakeJudge:
    """A judge model whose answer is ``decide(first shown, second shown, prompt)``; it keeps its prompts."""

    def __init__(self, decide: Callable[[str, str, str], str], tokens: tuple[int, int] = (0, 0)) -> None:
        self.decide = decide
        self.tokens = tokens
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> Answer:
        self.prompts.append(prompt)
        shown = SHOWN.search(prompt)
        assert shown is not None
        text = self.decide(shown["a"], shown["b"], prompt)
        return Answer(text=text, raw=text, input_tokens=self.tokens[0], output_tokens=self.tokens[1])


def said(better: str) -> str:
    return json.dumps({"better": better, "reason": "It says so."})


def always_first(first: str, second: str, prompt: str) -> str:
    return said("A")


def prefers_good(first: str, second: str, prompt: str) -> str:
    """A consistent judge: the answer that says "good" is better, whatever its position."""
    if ("good" in first) == ("good" in second):
        return said("tie")
    return said("A" if "good" in first else "B")


def pairs(*answers: tuple[str, str]) -> list[PairToJudge]:
    return [
        PairToJudge(case=Case(id=f"c{i}", question=f"question {i}"), base_answer=base, tuned_answer=tuned)
        for i, (base, tuned) in enumerate(answers)
    ]


def judged(
    judge: FakeJudge, to_judge: Sequence[PairToJudge], settings: JudgeSettings | None = None, **models: str
) -> Pairwise:
    judgments = judge_pairs(to_judge, judge, NO_WAIT)
    return summarize(
        judgments,
        judge=settings or JudgeSettings(connection="conn-judge", model_id="judge-model"),
        base_model=models.get("base_model", "base-model"),
        tuned_model=models.get("tuned_model", "tuned-model"),
    )


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial p against 1/2, summed here independently of the module."""
    low = min(k, n - k)
    tail: float = sum(comb(n, i) for i in range(low + 1)) / 2**n
    return min(1.0, 2 * tail)


def test_a_judge_that_always_chooses_the_first_answer_makes_every_pair_an_inconsistent_tie() -> None:
    # Given a judge that answers "A" whatever it is shown, and four pairs
    to_judge = pairs(("x", "good"), ("good", "x"), ("x", "y"), ("good", "good"))

    # When the pairs are judged in both orders
    report = judged(FakeJudge(always_first), to_judge)

    # Then no pair is won or lost: every pair is inconsistent, and counted as a tie
    assert (report.wins, report.losses, report.ties, report.inconsistent, report.unjudged) == (0, 0, 4, 4, 0)
    assert report.win_rate == 0.0
    assert report.sign_p == 1.0
    assert {row.outcome for row in report.pairs} == {PairOutcome.INCONSISTENT}


def test_a_judge_that_always_chooses_the_first_answer_is_reported_as_preferring_the_first_position() -> None:
    # Given a judge that answers "A" whatever it is shown
    to_judge = pairs(("x", "good"), ("good", "x"), ("x", "y"), ("good", "good"))

    # When the pairs are judged
    bias = judged(FakeJudge(always_first), to_judge).position_bias

    # Then all 8 of its choices went to the first answer, a preference the report names
    assert (bias.choices, bias.chose_first, bias.chose_second) == (8, 8, 0)
    assert bias.first_rate == 1.0
    assert bias.p_value == pytest.approx(binomial_two_sided(8, 8))
    assert bias.prefers == "first"
    assert bias.inconsistency_rate == 1.0
    assert bias.finding.startswith("the judge prefers the answer shown first: it chose it in 8 of 8 choices")


def test_a_consistent_judge_gives_wins_losses_and_ties_and_no_position_preference() -> None:
    # Given a judge that prefers the answer saying "good" wherever it is shown: the trained model's answer
    # is the good one in three pairs, the base's in one, both in one
    answers = [("x", "good"), ("y", "good"), ("z", "good one"), ("good", "x"), ("good", "good")]
    to_judge = pairs(*answers)

    # When the pairs are judged
    report = judged(FakeJudge(prefers_good), to_judge)

    # Then the figures are those the pairs give, recomputed here
    wins = sum("good" in tuned and "good" not in base for base, tuned in answers)
    losses = sum("good" in base and "good" not in tuned for base, tuned in answers)
    assert (report.wins, report.losses, report.ties, report.inconsistent) == (wins, losses, 1, 0)
    assert report.win_rate == pytest.approx(wins / len(answers))
    assert report.sign_p == pytest.approx(binomial_two_sided(losses, wins + losses))
    bias = report.position_bias
    assert (bias.choices, bias.chose_first, bias.chose_second) == (8, 4, 4)
    assert bias.prefers is None
    assert bias.inconsistency_rate == 0.0
    assert bias.finding.startswith("no position preference")


def test_the_judge_sees_the_case_s_question_rubric_and_reference_and_both_answers_in_each_order() -> None:
    # Given a case with a rubric and a reference
    case = RubricCase(
        id="c0", question="Why is the sky blue?", rubric=["- clear: it is clear"], reference="Light"
    )
    judge = FakeJudge(prefers_good)

    # When its pair is judged
    judge_pairs([PairToJudge(case=case, base_answer="base says", tuned_answer="tuned says")], judge, NO_WAIT)

    # Then the judge was asked twice, the base's answer shown first, then the trained model's
    assert len(judge.prompts) == 2
    for prompt in judge.prompts:
        assert "Why is the sky blue?" in prompt and "- clear: it is clear" in prompt and "Light" in prompt
    assert SHOWN.search(judge.prompts[0]).groupdict() == {"a": "base says", "b": "tuned says"}  # type: ignore[union-attr]
    assert SHOWN.search(judge.prompts[1]).groupdict() == {"a": "tuned says", "b": "base says"}  # type: ignore[union-attr]


def test_an_unreadable_answer_is_asked_again_with_what_was_wrong_and_its_pair_counts_once_read() -> None:
    # Given a judge whose first answer to each order is not the JSON asked for
    def malformed_first(first: str, second: str, prompt: str) -> str:
        return prefers_good(first, second, prompt) if "could not be read" in prompt else "I prefer A."

    judge = FakeJudge(malformed_first, tokens=(100, 7))

    # When a pair is judged
    report = judged(judge, pairs(("x", "good")))

    # Then each order was asked once more, told what was wrong, and the pair is won
    assert len(judge.prompts) == 4
    assert "Your last reply could not be read: the reply is not one JSON object." in judge.prompts[1]
    assert (report.wins, report.unjudged) == (1, 0)
    # And the judge's four answers are counted apart, with their tokens
    assert (report.judge_use.answers, report.judge_use.input_tokens, report.judge_use.output_tokens) == (
        4,
        400,
        28,
    )


def test_a_pair_the_judge_cannot_answer_readably_after_its_retry_is_unjudged() -> None:
    # Given a judge that never answers in the form asked, and one pair it can judge
    def stubborn(first: str, second: str, prompt: str) -> str:
        return "B is better" if "stubborn" in first + second else prefers_good(first, second, prompt)

    # When both pairs are judged
    report = judged(FakeJudge(stubborn), pairs(("stubborn", "good"), ("x", "good")))

    # Then the unreadable pair is unjudged, neither a win nor a tie, and left out of the win rate
    assert (report.wins, report.losses, report.ties, report.unjudged) == (1, 0, 0, 1)
    assert report.win_rate == 1.0
    assert report.position_bias.choices == 2
    row = report.pairs[0]
    assert (row.outcome, row.base_first, row.tuned_first) == (PairOutcome.UNJUDGED, None, None)
    assert row.why_unjudged == (
        "its answer could not be read after a retry: the reply is not one JSON object."
    )


def test_a_judge_that_gives_no_answer_leaves_the_pair_unjudged_with_the_reason() -> None:
    # Given a judge whose every call fails
    def failing(first: str, second: str, prompt: str) -> str:
        raise ModelCallError("the judge timed out after 60 s", retryable=False)

    # When a pair is judged
    report = judged(FakeJudge(failing), pairs(("x", "good")))

    # Then the pair is unjudged, with why
    assert report.unjudged == 1
    assert report.pairs[0].why_unjudged is not None
    assert "the judge timed out after 60 s" in report.pairs[0].why_unjudged


TRAINED_LLAMA = "arn:aws:bedrock:us-east-1:123456789012:custom-model/meta.llama3-1-8b-instruct-v1:0/x1"
SAME_FAMILY = [
    "the judge is of the same family as the trained model: it may favour its answers",
    "the judge is of the same family as the base model: it may favour its answers",
]


@pytest.mark.parametrize(
    ("judge_model", "trained", "family", "warnings"),
    [
        ("meta.llama3-1-70b-instruct-v1:0", TRAINED_LLAMA, "llama", SAME_FAMILY),
        ("mistral.mistral-large-2407-v1:0", TRAINED_LLAMA, "mistral", []),
        # an adapter served under a name of its own is of the family it was trained from
        ("meta.llama3-1-70b-instruct-v1:0", "support-adapter-7", "llama", SAME_FAMILY),
    ],
)
def test_a_judge_of_a_compared_model_s_family_is_flagged(
    judge_model: str, trained: str, family: str, warnings: list[str]
) -> None:
    # Given a judge comparing a Llama model, trained, with its Llama base
    settings = JudgeSettings(connection="conn-judge", model_id=judge_model)

    # When the pairs are judged
    report = judged(
        FakeJudge(prefers_good),
        pairs(("x", "good")),
        settings,
        base_model="meta.llama3-1-8b-instruct-v1:0",
        tuned_model=trained,
    )

    # Then a Llama judge is warned of, for each model of its family, and a Mistral judge is not
    assert report.judge_family == family
    assert report.warnings == warnings


def test_a_family_that_cannot_be_told_is_warned_of_once_as_unknown() -> None:
    # Given a judge whose model id tells no family, and a Llama judge comparing models whose ids tell none
    unknown_judge = JudgeSettings(connection="conn-judge", model_id="house-judge")
    llama_judge = JudgeSettings(connection="conn-judge", model_id="meta.llama3-1-70b-instruct-v1:0")

    # When each judges the pairs
    of_judge = judged(FakeJudge(prefers_good), pairs(("x", "good")), unknown_judge, base_model="mistral-7b")
    of_models = judged(
        FakeJudge(prefers_good),
        pairs(("x", "good")),
        llama_judge,
        base_model="house-base",
        tuned_model="house-2",
    )

    # Then the report says which family could not be told (the judge's once), not that they differ
    assert of_judge.warnings == [
        "the judge's family cannot be told from its model id 'house-judge' (give it as the judge's family): "
        "whether it favours a model of its own family is not known"
    ]
    assert of_models.warnings == [
        "the trained model's family cannot be told from 'house-2' or 'house-base': whether the judge favours "
        "its answers is not known",
        "the base model's family cannot be told from 'house-base': whether the judge favours its answers is "
        "not known",
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"better": "A"}', 'the reply must be a JSON object with exactly "better" and "reason".'),
        ('{"better": "first", "reason": "r"}', '"better" must be "A", "B" or "tie", not "first".'),
        ('{"better": "B", "reason": "two\\nlines"}', '"reason" must be one sentence on one line.'),
        ("The answer A is better.", "the reply is not one JSON object."),
    ],
)
def test_a_judge_s_answer_not_in_the_form_asked_says_what_is_wrong(text: str, problem: str) -> None:
    assert parse_preference(text) == problem


def test_a_judge_s_answer_in_one_json_fence_is_read() -> None:
    assert parse_preference('```json\n{"better": "tie", "reason": "Both fit."}\n```') == Preference(
        better="tie", reason="Both fit."
    )


def test_a_reasoning_judge_s_answer_is_read_after_its_reasoning_block() -> None:
    # Given a judge that reasons in a <think> block (weighing the other answer first) before its JSON
    text = '<think>\nA is longer. But B answers it.\n</think>\n{"better": "B", "reason": "B answers."}'
    # When it is read / Then the JSON after the block is the answer; a reply cut off inside it is none
    assert parse_preference(text) == Preference(better="B", reason="B answers.")
    assert parse_preference("<think>\nA is longer, but") == (
        "the reply ended inside its reasoning block, with no JSON object after it."
    )


def test_the_prompt_names_no_rubric_when_the_case_has_none() -> None:
    assert "(none given: judge which answer answers the question better)" in pairwise_prompt(
        Case(id="c0", question="q"), "a", "b"
    )


def test_the_comparison_report_shows_the_pairwise_section_with_its_warning_and_position_bias(
    tmp_path: Path,
) -> None:
    # Given a Llama judge that always picks the first answer, judging a Llama model against its base
    settings = JudgeSettings(connection="conn-judge", model_id="meta.llama3-1-70b-instruct-v1:0")
    section = judged(
        FakeJudge(always_first),
        pairs(("x", "good"), ("y", "good"), ("z", "good")),
        settings,
        tuned_model="llama-3-8b:ft",
    )
    before, after = table(fixed=1, broken=0, same_pass=1, same_fail=0)

    # When the comparison is written with it
    comparison = compare_runs(
        BEFORE,
        outcomes(tmp_path / "before.zip", before),
        AFTER,
        outcomes(tmp_path / "after.zip", after),
        pairwise=section,
    )
    json_path, html_path = write_comparison(comparison, tmp_path / "out")

    # Then the JSON carries the pairwise figures, and the page the warning and the judge's preference
    written = json.loads(json_path.read_text(encoding="utf-8"))["pairwise"]
    assert (written["ties"], written["inconsistent"], written["position_bias"]["chose_first"]) == (3, 3, 6)
    page = html_path.read_text(encoding="utf-8")
    assert "Warning: the judge is of the same family as the trained model: it may favour its answers." in page
    assert "the judge prefers the answer shown first: it chose it in 6 of 6 choices" in page


def test_a_comparison_without_a_judge_has_no_pairwise_section(tmp_path: Path) -> None:
    # Given two runs of an environment that names no judge
    before, after = table(fixed=1, broken=0, same_pass=1, same_fail=0)

    # When they are compared and written
    comparison = compare_runs(
        BEFORE, outcomes(tmp_path / "before.zip", before), AFTER, outcomes(tmp_path / "after.zip", after)
    )
    json_path, html_path = write_comparison(comparison, tmp_path / "out")

    # Then neither file mentions pairwise judging
    assert "pairwise" not in json.loads(json_path.read_text(encoding="utf-8"))
    assert "pairwise" not in html_path.read_text(encoding="utf-8")
