"""What a reinforcement preparation's grader reads of each case: the environment's own scoring fields.

A reinforcement example carries, beside its prompt, the fields the environment's scoring needs to judge an
answer to its source case (``benchgen.scoring.reward.grading_fields``): the same scoring that judged the
run then rewards the policy. The fields come from the case's line in ``cases.jsonl``, which holds the
template's own fields (``answers`` and ``context`` for qa, ``route`` and ``costs`` for routing, ``files``
and ``test_command`` for code); a case that only the verdict describes (a custom scoring program may judge
without ``cases.jsonl``) is graded from the question and gold answer the verdict recorded.

The case lines wait on disk in the preparation's scratch database, so memory stays flat however many cases
the environment holds.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, CaseText, validate_case
from benchgen.judging import JudgeSettings
from benchgen.vocabulary import TemplateName


class CaseLines:
    """Every line of ``cases.jsonl`` by case id (the first line of a repeated id, as scoring reads it)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        db.execute("CREATE TABLE case_line (case_id TEXT PRIMARY KEY, line BLOB NOT NULL)")

    def fill(self, lines: Iterable[tuple[str, bytes]]) -> None:
        self._db.executemany("INSERT OR IGNORE INTO case_line (case_id, line) VALUES (?, ?)", lines)
        self._db.commit()

    def case(self, case_id: str, text: CaseText, kind: type[Case] = Case) -> Case:
        """The case as ``cases.jsonl`` holds it, a ``kind`` (a ValueError when the line is not one), or,
        without a line, as the verdict described it."""
        row = self._db.execute("SELECT line FROM case_line WHERE case_id = ?", (case_id,)).fetchone()
        if row is not None:
            return validate_case(json.loads(row[0]), kind)
        return kind(id=case_id, question=text.question, answer=text.answer, solution=text.solution)

    def grading(
        self,
        case_id: str,
        text: CaseText,
        template: TemplateName | None,
        criteria: Sequence[Criterion],
        judge: JudgeSettings | None = None,
    ) -> dict[str, Any]:
        """The grader's fields for the case ``case_id`` (``criteria``, ``judge``: the environment's)."""
        # Imported here, as only a reinforcement preparation grades: the reward builds every template.
        from benchgen.scoring import registry
        from benchgen.scoring.reward import grading_fields

        kind = Case if template is None else registry.template(template).case_type
        return grading_fields(self.case(case_id, text, kind), template, criteria, judge)
