"""Two runs' verdicts paired on case id, optionally restricted to a given set of cases.

Each run's ``verdicts.jsonl`` is read once into a compact outcome per case (pass or fail, gold, criteria,
breakdown values); the full verdicts, with the model's responses, are read again only for the cases whose
outcome changed. Cases that only one run judged, asked-for cases that neither judged, and cases whose gold
answer differs between the runs (not the same benchmark case after all) are kept apart and reported.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchgen.errors import ScoringError
from benchgen.report.detailed import BREAKDOWN_FIELDS
from benchgen.verdicts import VERDICTS_NAME, Verdict, read_verdicts, verdict_lines


@dataclass(frozen=True, slots=True)
class Outcome:
    passed: bool
    answered: bool | None  # whether the grader could read an answer; None: the scoring did not say
    gold: str
    criteria: tuple[tuple[str, bool | None], ...]  # None: not judged on its own
    breakdown: tuple[tuple[str, str], ...]  # (field, value) for each breakdown field the case has

    @classmethod
    def of(cls, verdict: Verdict) -> Outcome:
        return cls(
            passed=verdict.passed,
            answered=verdict.answered,
            gold=verdict.gold,
            criteria=tuple((criterion.id, criterion.passed) for criterion in verdict.criteria),
            breakdown=tuple(
                (name, str(value))
                for name in BREAKDOWN_FIELDS
                if (value := getattr(verdict, name)) is not None
            ),
        )


@dataclass
class Pairing:
    pairs: dict[str, tuple[Outcome, Outcome]] = field(default_factory=dict)  # by case id, sorted
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    in_neither: list[str] = field(default_factory=list)  # asked for, judged by neither run
    gold_differs: list[str] = field(default_factory=list)


def _verdicts(scoring_output: Path, label: str) -> Iterator[Verdict]:
    with verdict_lines(scoring_output) as lines:
        if lines is None:
            raise ScoringError(
                f"the {label} run's {scoring_output.name} holds no per-case verdicts ({VERDICTS_NAME}), so "
                "there is nothing to pair; compare runs scored by a built-in template or by a scoring "
                "program that writes verdicts"
            )
        where = f"the {label} run's {VERDICTS_NAME}"
        for verdict, _ in read_verdicts(lines, Verdict.model_validate_json, where=where):
            yield verdict


def outcomes(scoring_output: Path, label: str, wanted: Collection[str] | None = None) -> dict[str, Outcome]:
    """Each judged case's outcome (the first verdict of a repeated case id), only ``wanted`` ones if given."""
    found: dict[str, Outcome] = {}
    for verdict in _verdicts(scoring_output, label):
        if verdict.case_id not in found and (wanted is None or verdict.case_id in wanted):
            found[verdict.case_id] = Outcome.of(verdict)
    return found


def verdicts_for(scoring_output: Path, label: str, ids: Collection[str]) -> dict[str, Verdict]:
    """The full verdicts of the cases ``ids`` (the first of a repeated case id)."""
    found: dict[str, Verdict] = {}
    for verdict in _verdicts(scoring_output, label):
        if verdict.case_id in ids and verdict.case_id not in found:
            found[verdict.case_id] = verdict
    return found


def pair(before: Path, after: Path, wanted: Collection[str] | None = None) -> Pairing:
    """Pair the verdicts of two scoring outputs on case id, over ``wanted`` cases or every judged case."""
    wanted_set = None if wanted is None else set(wanted)
    first = outcomes(before, "before", wanted_set)
    second = outcomes(after, "after", wanted_set)
    pairing = Pairing()
    for case_id in sorted(first.keys() | second.keys()):
        if case_id not in second:
            pairing.only_before.append(case_id)
        elif case_id not in first:
            pairing.only_after.append(case_id)
        elif first[case_id].gold != second[case_id].gold:
            pairing.gold_differs.append(case_id)
        else:
            pairing.pairs[case_id] = (first[case_id], second[case_id])
    if wanted_set is not None:
        pairing.in_neither = sorted(wanted_set - first.keys() - second.keys())
    return pairing
