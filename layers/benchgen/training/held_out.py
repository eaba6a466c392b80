"""A preparation's held-out cases in its scratch SQLite file.

The held-out set is every case of the environment version whose id falls in the test bucket, passed or
failed. It is a tenth of the cases by default, so it stays on disk like the rest of the build: checking a
candidate row against it costs two index lookups, not memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from benchgen.environment import Environment
from benchgen.finetune.split import SplitShares, in_test_bucket
from benchgen.training.examples import HeldOutCase, text_hash


def case_questions(env: Environment) -> Iterator[tuple[str, str]]:
    """Each case of ``env`` as ``(case id, question)``, streamed: what the held-out set is drawn from."""
    for case_id, question, _, _ in env.case_references():
        yield case_id, question


class HeldOutStore:
    """The held-out cases by case id, with an index on their text hashes."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        db.execute("CREATE TABLE held_out (case_id TEXT PRIMARY KEY, text_hash TEXT NOT NULL)")

    def fill(self, env: Environment, shares: SplitShares) -> int:
        """Every case of ``env`` in the test bucket (the first record of a repeated id wins)."""
        self._db.executemany(
            "INSERT OR IGNORE INTO held_out (case_id, text_hash) VALUES (?, ?)",
            (
                (case_id, text_hash(question))
                for case_id, question in case_questions(env)
                if in_test_bucket(case_id, shares)
            ),
        )
        self._db.execute("CREATE INDEX held_out_text ON held_out (text_hash)")
        self._db.commit()
        count: int = self._db.execute("SELECT COUNT(*) FROM held_out").fetchone()[0]
        return count

    def touches(self, case_id: str, hashes: tuple[str, str]) -> bool:
        """Whether a held-out case has this id or one of these text hashes."""
        row = self._db.execute(
            "SELECT EXISTS (SELECT 1 FROM held_out WHERE case_id = ?) "
            "OR EXISTS (SELECT 1 FROM held_out WHERE text_hash IN (?, ?))",
            (case_id, *hashes),
        ).fetchone()
        return bool(row[0])

    def __iter__(self) -> Iterator[HeldOutCase]:
        for case_id, digest in self._db.execute("SELECT case_id, text_hash FROM held_out ORDER BY case_id"):
            yield HeldOutCase(case_id=case_id, text_hash=digest)
