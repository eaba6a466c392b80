"""A preparation's scratch store: one SQLite file in its temp dir, so memory stays flat as cases grow.

Selected verdicts, the reference text of those cases, the pool rows and the built examples go to disk as
they stream by, and come back in a fixed order from an on-disk B-tree (case id; pool rank; split, then
example id). Python holds one row at a time; SQLite holds at most its page cache. The run artifact uses
only the pool choice; its examples go through ``spool``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from benchgen.cases import CaseText, Reference
from benchgen.finetune.seed import Selection, Source, pool_rank
from benchgen.finetune.split import SPLITS, Split
from benchgen.verdicts import Verdict

# Page cache in KiB (SQLite reads a negative cache_size as KiB): what SQLite may hold in memory, at any size.
CACHE_KIB = 8192


@contextmanager
def scratch_db(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a new SQLite file at ``path``, closed on exit; the file is the caller's to remove."""
    with closing(sqlite3.connect(path)) as db:
        # A scratch file, thrown away after the build: nothing to recover after a crash, so no journal
        # and no fsync.
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        # Sorts and index builds spill to temporary files rather than to memory.
        db.execute("PRAGMA temp_store = FILE")
        db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        yield db


class SelectedCase(NamedTuple):
    source: Source
    verdict: Verdict
    reference: CaseText | None
    origin: str  # what the caller named the verdicts' origin when it added them (a run id), or ""


class SelectedCases:
    """Selected verdicts keyed by case id (the first selected verdict of a case wins), and their text."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        db.execute(
            "CREATE TABLE selected "
            "(case_id TEXT PRIMARY KEY, source TEXT NOT NULL, verdict BLOB NOT NULL, origin TEXT NOT NULL)"
        )
        db.execute(
            "CREATE TABLE reference "
            "(case_id TEXT PRIMARY KEY, question TEXT NOT NULL, answer TEXT NOT NULL, solution TEXT)"
        )

    def add(self, selections: Iterable[Selection], *, origin: str = "") -> None:
        """Keep every selection, in the order given; a later one for a case already kept is dropped, also
        across calls, so the caller's first source of a case wins."""
        self._db.executemany(
            "INSERT OR IGNORE INTO selected (case_id, source, verdict, origin) VALUES (?, ?, ?, ?)",
            ((case_id, source.value, line, origin) for case_id, source, line in selections),
        )
        self._db.commit()

    def join_references(self, references: Iterable[Reference]) -> None:
        """Keep the text of the selected cases (the first record of a case wins); the rest pass by."""
        self._db.executemany(
            "INSERT OR IGNORE INTO reference (case_id, question, answer, solution) "
            "SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM selected WHERE case_id = ?1)",
            references,
        )
        self._db.commit()

    def __iter__(self) -> Iterator[SelectedCase]:
        """Each selected case by case id: its layer, its verdict, its reference text when there is one, and
        its origin."""
        rows = self._db.execute(
            "SELECT s.source, s.verdict, r.question, r.answer, r.solution, s.origin "
            "FROM selected AS s LEFT JOIN reference AS r USING (case_id) ORDER BY s.case_id"
        )
        for source, line, question, answer, solution, origin in rows:
            reference = (
                None if question is None else CaseText(question=question, answer=answer, solution=solution)
            )
            yield SelectedCase(Source(source), Verdict.model_validate_json(line), reference, origin)


def choose_pool_rows(
    db: sqlite3.Connection, rows: Iterable[tuple[str, bytes]], count: int, *, seed: int = 0
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``count`` lowest-ranked of ``(row id, line)`` pool rows (all if there are fewer), lowest first,
    ranked under ``seed`` (``seed.pool_rank``).

    The first row of a repeated id wins. The rows go to disk, so only the one being read back is in memory.
    """
    if count <= 0:
        return  # without reading the pool at all; SQLite would also read a negative LIMIT as no limit
    db.execute("CREATE TABLE pool (row_id TEXT PRIMARY KEY, rank TEXT NOT NULL, line BLOB NOT NULL)")
    db.executemany(
        "INSERT OR IGNORE INTO pool (row_id, rank, line) VALUES (?, ?, ?)",
        ((row_id, pool_rank(row_id, seed), line) for row_id, line in rows),
    )
    db.commit()
    # An index rather than a sort: with a LIMIT, SQLite's sort keeps ``count`` whole rows in memory.
    db.execute("CREATE INDEX pool_order ON pool (rank)")
    chosen = db.execute("SELECT row_id, line FROM pool INDEXED BY pool_order ORDER BY rank LIMIT ?", (count,))
    for row_id, line in chosen:
        yield row_id, json.loads(line)


class OrderedExamples:
    """Examples parked on disk as they are built, read back in order (split, then example id).

    Each is kept as its compact JSON. Two examples with the same split and id come back in the order they
    were added.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._count = 0
        self._rank: dict[Split, int] = {split: rank for rank, split in enumerate(SPLITS)}
        db.execute(
            "CREATE TABLE example (split INTEGER NOT NULL, example_id TEXT NOT NULL, body BLOB NOT NULL)"
        )

    def add_json(self, split: Split, example_id: str, body: bytes) -> None:
        """Park an example of any shape as its JSON (a preparation keeps its own example model)."""
        self._db.execute(
            "INSERT INTO example (split, example_id, body) VALUES (?, ?, ?)",
            (self._rank[split], example_id, body),
        )
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def ordered_json(self) -> Iterator[tuple[Split, bytes]]:
        """Each example's compact JSON as it was added, in order, without parsing it back."""
        self._db.commit()
        # Built once all rows are in (faster than keeping it up to date on every insert); the index holds
        # the rowid after its columns, so it orders ties by insertion and the query needs no sort of its own.
        self._db.execute("CREATE INDEX IF NOT EXISTS example_order ON example (split, example_id)")
        rows = self._db.execute(
            "SELECT split, body FROM example INDEXED BY example_order ORDER BY split, example_id, rowid"
        )
        for rank, body in rows:
            yield SPLITS[rank], body
