"""Why a small example's preparation has coverage gaps, in numbers the user can check.

A preparation puts every case in train, validation or test by a hash of its id (80 / 10 / 10 by default),
and only the cases the model got wrong give rows. An example of 50 cases with 15 wrong ones leaves one or
two wrong cases, or none, for each held-out split, whatever cases they are: a split of fewer than 10 rows,
a criterion missing from a split, one case's augmentations a large share of a split. The demo ships
examples that small so that it takes seconds; these lines show that each gap follows from the example's
size and the hash, not from a fault. A gap of any other kind gets no reason: it is not expected.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchgen.finetune.split import DEFAULT_SHARES, SPLITS, SplitShares, split_for
from benchgen.training.coverage import CRITERION_MISSING_IN_SPLIT, SOURCE_DOMINATES, SPLIT_SMALL


class WrongCases:
    """The example's wrong cases (id -> the criteria its case exercises) and its size."""

    def __init__(self, wrong: Mapping[str, Sequence[str]], total: int, shares: SplitShares = DEFAULT_SHARES):
        self.wrong = dict(wrong)
        self.total = total
        self.shares = shares

    @classmethod
    def of_run(
        cls, cases_file: Path, detailed_results: Path, shares: SplitShares = DEFAULT_SHARES
    ) -> WrongCases:
        """From the bundle's reference cases and the run's detailed results, hashed into splits by the
        ``shares`` the preparation asks for."""
        criteria = {case["id"]: case.get("criteria", []) for case in _jsonl(cases_file)}
        verdicts = json.loads(detailed_results.read_text(encoding="utf-8"))["cases"]
        passed = {verdict["case_id"]: bool(verdict.get("passed")) for verdict in verdicts}
        wrong = {case_id: criteria.get(case_id, []) for case_id, right in passed.items() if not right}
        return cls(wrong, total=len(passed), shares=shares)

    def per_split(self, criterion: str | None = None) -> Counter[str]:
        found = Counter({split.value: 0 for split in SPLITS})
        for case_id, criteria in self.wrong.items():
            if criterion is None or criterion in criteria:
                found[split_for(case_id, self.shares).value] += 1
        return found

    def reason(self, gap: Mapping[str, Any]) -> str | None:
        """Why ``gap`` (a coverage gap as the API answers it) follows from the example's size."""
        size = f"expected for this {self.total}-case example with {len(self.wrong)} wrong cases"
        subject = str(gap.get("subject"))
        if gap.get("kind") == SPLIT_SMALL:
            share = getattr(self.shares, subject)
            count = self.per_split()[subject]
            return f"{size}: {count} of them hash into {subject}, the split of {share}% of the cases"
        if gap.get("kind") == CRITERION_MISSING_IN_SPLIT:
            counts = ", ".join(f"{split} {count}" for split, count in self.per_split(subject).items())
            return f"{size}: those exercising '{subject}' hash into {counts}"
        if gap.get("kind") == SOURCE_DOMINATES and subject in self.wrong:
            split = split_for(subject, self.shares).value
            count = self.per_split()[split]
            return f"{size}: {count} of them hash into {split}, so each is a large share of it"
        return None


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)
