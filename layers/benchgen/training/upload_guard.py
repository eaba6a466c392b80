"""The last check before training files leave: no uploaded row may carry a held-out case.

The package build checks prepared examples (:func:`benchgen.training.coverage.check_held_out` and the
package's own refusal); this reads what is actually sent, the rendered rows of ``train.jsonl`` and
``validation.jsonl`` in whatever shape the export profile gave them, against the manifest's held-out ids
and text hashes. Rendered rows keep no prepared example, so the check is over their texts: every string
of a row (and each paragraph of it, since a prompt-completion row leads its prompt with the system text)
is hashed the way held-out cases are (:func:`benchgen.training.examples.text_hash`), and any field named
like a case id is compared with the held-out ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from benchgen.training.coverage import MAX_PROBLEMS
from benchgen.training.examples import HeldOutCase, text_hash

#: Row fields that name a source case, where a shape keeps one.
CASE_ID_FIELDS = frozenset({"id", "case_id", "source_case_id"})


def _strings(value: Any, key: str | None = None) -> Iterator[tuple[str | None, str]]:
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, str(name))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)


def _hashes(text: str) -> set[str]:
    paragraphs = [part for part in text.split("\n\n") if part.strip()]
    return {text_hash(text), *(text_hash(part) for part in paragraphs)}


def _problem(row: Any, ids: set[str], hashes: set[str]) -> str | None:
    for key, text in _strings(row):
        if key in CASE_ID_FIELDS and text in ids:
            return f"comes from held-out case '{text}'"
        if _hashes(text) & hashes:
            return "repeats the text of a held-out case"
    return None


def held_out_rows(files: Iterable[tuple[str, Iterable[bytes]]], held_out: Iterable[HeldOutCase]) -> list[str]:
    """What is wrong with ``files`` (name, lines): each row that carries a held-out case, or is not a JSON
    object (it cannot be checked, so it is not sent). Empty when every row is clean; the first
    ``MAX_PROBLEMS`` rows are named, the rest counted in a last line."""
    ids: set[str] = set()
    hashes: set[str] = set()
    for case in held_out:
        ids.add(case.case_id)
        hashes.add(case.text_hash)
    problems: list[str] = []
    more = 0
    for name, lines in files:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                problem: str | None = "is not JSON"
            else:
                problem = _problem(row, ids, hashes) if isinstance(row, dict) else "is not a JSON object"
            if problem is None:
                continue
            if len(problems) < MAX_PROBLEMS:
                problems.append(f"{name} line {number} {problem}")
            else:
                more += 1
    if more:
        problems.append(f"and {more} more rows like these")
    return problems
