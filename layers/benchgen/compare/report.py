"""The comparison report: one benchmark's cases judged before and after training, paired on case id.

``compare_runs`` reads the two runs' verdicts and returns a :class:`Comparison`, the JSON the API and the
command line give out and the HTML page renders. The verdict is a rule over the paired counts (see
:func:`conclude`), never a judgment call.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path

from pydantic import ConfigDict, Field

from benchgen.compare.pairing import Outcome, pair, verdicts_for
from benchgen.compare.pairwise import Pairwise
from benchgen.compare.selection import PackageRef
from benchgen.compare.stats import (
    ALPHA,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    GENERATOR,
    LEVEL,
    MDE_RULE,
    POWER,
    SourceCase,
    holm,
    mcnemar_exact,
    min_discordant,
    minimum_detectable_effect,
    paired_bootstrap,
)
from benchgen.errors import BenchGenError
from benchgen.finetune.seed import source_case_id
from benchgen.lazy_model import LazyModel
from benchgen.verdicts import Verdict

JSON_NAME = "comparison.json"
HTML_NAME = "comparison.html"
NOT_ESTABLISHED_HEADLINE = "Training completion alone does not establish benchmark improvement"
NOT_ESTABLISHED = (
    f"{NOT_ESTABLISHED_HEADLINE}: a training job that succeeded only says the provider finished. Whether "
    "the model got better on this benchmark takes a paired comparison like this one, on cases it was "
    "never trained on, and its verdict is the answer."
)
NOT_HELD_OUT = (
    "The cases were not restricted to a training package's held-out set: if the after model was trained "
    "on some of them, its accuracy on them can flatter it. Give the package to compare on held-out cases."
)
PAIRED_TESTS = (
    "Paired on case id: only cases both runs judged count. McNemar's exact test uses the cases whose "
    "outcome changed (fixed: failed before, passed after; broken: passed before, failed after)."
)
ANSWER_RATE_NOTE = (
    "Accuracy counts an answer right only when the grader can read it: a model that learns to state its "
    "final answer the way the grader reads it gains accuracy without learning the task. The answer rate is "
    "the share of paired cases whose answer the grader could read at all, and accuracy among answered the "
    "share of those that were right; an accuracy gain that the answer rate carries, with accuracy among "
    "answered unchanged, is a gain in format, not in substance."
)
ANSWERING_NOT_KNOWN = "not known: the scoring did not record whether it could read each answer"
HOLM_RULE = (
    "Per-criterion and per-breakdown rows are one family of tests: their McNemar p-values are adjusted "
    "together by Holm's step-down method, so reading down the tables for a significant row keeps the "
    f"chance of any false finding at {ALPHA}."
)


class Conclusion(StrEnum):
    IMPROVED = "improved"
    REGRESSED = "regressed"
    NO_CHANGE = "no detectable change"
    TOO_SMALL = "sample too small to tell"


class NoPairedCases(BenchGenError):
    """The two runs share no judged case to compare on."""


class RunIdentity(LazyModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    model: str
    benchmark: str | None = None
    environment_id: str | None = None


class Side(LazyModel):
    """One run's judgment of a case, as the run recorded it."""

    response: str  # the model's whole output
    prediction: str | None  # the answer read from it; None when none could be read
    passed: bool
    detail: str
    criteria: dict[str, bool | None]  # None: the scoring did not judge the criterion on its own


class Flip(LazyModel):
    """A case whose outcome changed, with both responses and judgments side by side."""

    case_id: str
    question: str
    gold: str
    before: Side
    after: Side


class Subgroup(LazyModel):
    """The paired comparison restricted to one criterion or one breakdown value."""

    kind: str  # "criterion", or a breakdown field: difficulty, domain, route
    value: str
    cases: int
    accuracy_before: float
    accuracy_after: float
    difference: float
    fixed: int
    broken: int
    p_value: float
    p_holm: float


class Answering(LazyModel):
    """One run's answers as the grader read them, on the paired cases: how many it could read at all (math:
    a final answer was extracted) and how many of those were right. Every field is None (not known) when
    the run's scoring did not record, for every paired case, whether it could read an answer."""

    answered: int | None
    answer_rate: float | None  # answered / paired cases
    passed_among_answered: int | None
    accuracy_among_answered: float | None  # passed among answered / answered; None when none was answered


class Bootstrap(LazyModel):
    low: float
    high: float
    level: float
    resamples: int
    seed: int
    source_cases: int
    generator: str = GENERATOR
    method: str = (
        "percentile interval of accuracy after minus accuracy before over resamples of source cases "
        "(a case and its variants travel together), quantiles interpolated linearly between order "
        "statistics"
    )


class Comparison(LazyModel):
    before: RunIdentity
    after: RunIdentity
    package_id: str | None = None
    package_sha256: str | None = None
    training_method: str | None = None  # the package's preparation method, where a package is given
    reward: str | None = None  # reinforcement: what rewarded the training
    selection: str  # which cases were asked for, in words
    paired_cases: int
    accuracy_before: float
    accuracy_after: float
    difference: float
    fixed_count: int
    broken_count: int
    both_passed: int
    both_failed: int
    mcnemar_p: float
    answering_before: Answering
    answering_after: Answering
    answering_note: str = ANSWER_RATE_NOTE
    bootstrap: Bootstrap
    minimum_detectable_effect: float | None
    mde_rule: str = MDE_RULE
    alpha: float = ALPHA
    power: float = POWER
    verdict: Conclusion
    verdict_reason: str
    verdict_rule: str
    subgroups: list[Subgroup] = Field(default_factory=list)
    fixed: list[Flip] = Field(default_factory=list)
    broken: list[Flip] = Field(default_factory=list)
    only_before: list[str] = Field(default_factory=list)
    only_after: list[str] = Field(default_factory=list)
    in_neither: list[str] = Field(default_factory=list)
    gold_differs: list[str] = Field(default_factory=list)
    # Where the environment names a judge: which answer it prefers, pair by pair (left out of the JSON
    # where it names none, so those comparisons read as they always did).
    pairwise: Pairwise | None = Field(default=None, exclude_if=lambda value: value is None)
    notice: str = NOT_ESTABLISHED
    notes: list[str] = Field(default_factory=lambda: [PAIRED_TESTS, HOLM_RULE])


def verdict_rule() -> str:
    least = min_discordant(ALPHA)
    return (
        f"sample too small to tell: fewer than {least} cases changed outcome, so McNemar's exact test "
        f"could not reach p < {ALPHA} even if every change went one way (this includes every comparison "
        f"of fewer than {least} cases); improved or regressed: McNemar p < {ALPHA}, in the direction of "
        "the accuracy difference; otherwise no detectable change"
    )


def conclude(fixed: int, broken: int, p_value: float) -> tuple[Conclusion, str]:
    """The plain verdict from the discordant counts, and the reason in words."""
    changed = fixed + broken
    least = min_discordant(ALPHA)
    if changed < least:
        cases = "case" if changed == 1 else "cases"
        return Conclusion.TOO_SMALL, (
            f"only {changed} {cases} changed outcome; with fewer than {least} no split of them can reach "
            f"p < {ALPHA}, so the comparison cannot tell a change from chance"
        )
    if p_value < ALPHA:
        conclusion = Conclusion.IMPROVED if fixed > broken else Conclusion.REGRESSED
        return conclusion, f"{fixed} fixed against {broken} broken, McNemar p = {p_value:.4g} < {ALPHA}"
    return Conclusion.NO_CHANGE, (
        f"{fixed} fixed against {broken} broken, McNemar p = {p_value:.4g} >= {ALPHA}: no change this "
        "sample can tell from chance"
    )


def _subgroup_cells(
    pairs: Iterable[tuple[Outcome, Outcome]],
) -> dict[tuple[str, str], Counter[tuple[bool, bool]]]:
    """Per subgroup, how many cases went (passed before, passed after) each way: four cells each."""
    groups: dict[tuple[str, str], Counter[tuple[bool, bool]]] = defaultdict(Counter)
    for first, second in pairs:
        after_criteria = dict(second.criteria)
        for criterion, passed in first.criteria:
            after = after_criteria.get(criterion)
            if passed is not None and after is not None:  # judged on this criterion in both runs
                groups[("criterion", criterion)][(passed, after)] += 1
        # Breakdown values describe the case (its reference data), the same in both runs of one benchmark.
        for name, value in first.breakdown:
            groups[(name, value)][(first.passed, second.passed)] += 1
    return groups


def _subgroups(pairs: Iterable[tuple[Outcome, Outcome]]) -> list[Subgroup]:
    groups = _subgroup_cells(pairs)
    keys = sorted(groups, key=lambda key: (key[0] != "criterion", key))
    cells = [groups[key] for key in keys]
    p_values = [mcnemar_exact(cell[(True, False)], cell[(False, True)]) for cell in cells]
    rows = []
    for (kind, value), cell, p_value, p_holm in zip(keys, cells, p_values, holm(p_values), strict=True):
        cases = cell.total()  # at least one: a subgroup exists because a case is in it
        before = (cell[(True, True)] + cell[(True, False)]) / cases
        after = (cell[(True, True)] + cell[(False, True)]) / cases
        rows.append(
            Subgroup(
                kind=kind,
                value=value,
                cases=cases,
                accuracy_before=before,
                accuracy_after=after,
                difference=after - before,
                fixed=cell[(False, True)],
                broken=cell[(True, False)],
                p_value=p_value,
                p_holm=p_holm,
            )
        )
    return rows


def _sources(pairs: dict[str, tuple[Outcome, Outcome]]) -> list[SourceCase]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for case_id, (first, second) in pairs.items():
        total = totals[source_case_id(case_id)]
        total[0] += 1
        total[1] += first.passed
        total[2] += second.passed
    return [SourceCase(*totals[key]) for key in sorted(totals)]


def answering(outcomes: Sequence[Outcome]) -> Answering:
    """The answer rate and the accuracy among answered of one run's paired outcomes (not known when any
    outcome does not say whether its answer could be read)."""
    if not outcomes or any(outcome.answered is None for outcome in outcomes):
        return Answering(
            answered=None, answer_rate=None, passed_among_answered=None, accuracy_among_answered=None
        )
    answered = sum(bool(outcome.answered) for outcome in outcomes)
    right = sum(bool(outcome.answered) and outcome.passed for outcome in outcomes)
    return Answering(
        answered=answered,
        answer_rate=answered / len(outcomes),
        passed_among_answered=right,
        accuracy_among_answered=right / answered if answered else None,
    )


def _side(verdict: Verdict) -> Side:
    return Side(
        response=verdict.raw_prediction or (verdict.prediction or ""),
        prediction=verdict.prediction,
        passed=verdict.passed,
        detail=verdict.detail,
        criteria={criterion.id: criterion.passed for criterion in verdict.criteria},
    )


def _flips(ids: list[str], before: dict[str, Verdict], after: dict[str, Verdict]) -> list[Flip]:
    return [
        Flip(
            case_id=case_id,
            question=before[case_id].question or after[case_id].question,
            gold=before[case_id].gold,
            before=_side(before[case_id]),
            after=_side(after[case_id]),
        )
        for case_id in ids
    ]


def _selection(cases: Sequence[str] | None, package: PackageRef | None) -> str:
    if cases is None:
        return "every case both runs judged"
    if package is not None and list(cases) == list(package.held_out):
        return f"the {len(cases)} held-out cases of package {package.package_id}"
    if package is not None:
        return f"{len(cases)} listed cases, all held out by package {package.package_id}"
    return f"{len(cases)} listed cases"


def compare_runs(
    before: RunIdentity,
    before_scoring: Path,
    after: RunIdentity,
    after_scoring: Path,
    *,
    cases: Sequence[str] | None = None,
    package: PackageRef | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    pairwise: Pairwise | None = None,
) -> Comparison:
    """Compare two scoring outputs (``scoring_output.zip``) on ``cases``, or on every case both judged;
    ``pairwise``: what the environment's judge preferred of the two runs' answers, when it names one."""
    pairing = pair(before_scoring, after_scoring, cases)
    pairs = pairing.pairs
    if not pairs:
        raise NoPairedCases(
            f"the before run ({before.run_id}) and the after run ({after.run_id}) judged no case in common "
            f"among {_selection(cases, package)}; compare two runs of the same benchmark on the same cases"
        )
    fixed_ids = [case_id for case_id, (first, second) in pairs.items() if not first.passed and second.passed]
    broken_ids = [case_id for case_id, (first, second) in pairs.items() if first.passed and not second.passed]
    changed = set(fixed_ids) | set(broken_ids)
    before_verdicts = verdicts_for(before_scoring, "before", changed)
    after_verdicts = verdicts_for(after_scoring, "after", changed)
    n = len(pairs)
    passed_before = sum(first.passed for first, _ in pairs.values())
    passed_after = sum(second.passed for _, second in pairs.values())
    p_value = mcnemar_exact(len(broken_ids), len(fixed_ids))
    conclusion, reason = conclude(len(fixed_ids), len(broken_ids), p_value)
    sources = _sources(pairs)
    interval = paired_bootstrap(sources, resamples=resamples, seed=seed, level=LEVEL)
    return Comparison(
        before=before,
        after=after,
        package_id=None if package is None else package.package_id,
        package_sha256=None if package is None else package.sha256,
        training_method=None if package is None else package.method,
        reward=None if package is None else package.reward,
        selection=_selection(cases, package),
        paired_cases=n,
        accuracy_before=passed_before / n,
        accuracy_after=passed_after / n,
        difference=(passed_after - passed_before) / n,
        fixed_count=len(fixed_ids),
        broken_count=len(broken_ids),
        both_passed=sum(first.passed and second.passed for first, second in pairs.values()),
        both_failed=sum(not first.passed and not second.passed for first, second in pairs.values()),
        mcnemar_p=p_value,
        answering_before=answering([first for first, _ in pairs.values()]),
        answering_after=answering([second for _, second in pairs.values()]),
        bootstrap=Bootstrap(
            low=interval.low,
            high=interval.high,
            level=LEVEL,
            resamples=resamples,
            seed=seed,
            source_cases=len(sources),
        ),
        minimum_detectable_effect=minimum_detectable_effect(n, len(changed) / n),
        verdict=conclusion,
        verdict_reason=reason,
        verdict_rule=verdict_rule(),
        subgroups=_subgroups(pairs.values()),
        fixed=_flips(fixed_ids, before_verdicts, after_verdicts),
        broken=_flips(broken_ids, before_verdicts, after_verdicts),
        only_before=pairing.only_before,
        only_after=pairing.only_after,
        in_neither=pairing.in_neither,
        gold_differs=pairing.gold_differs,
        pairwise=pairwise,
        notes=[PAIRED_TESTS, HOLM_RULE, *([NOT_HELD_OUT] if package is None else [])],
    )
