"""The 13-gram contamination report: how much of the training text repeats a held-out case's text.

Texts are compared as word tokens (``\\w+`` after case folding, so punctuation and spacing do not matter).
Every run of 13 consecutive tokens of a held-out case's text is hashed into an index; the training rows are
then streamed once, and a row overlaps a case when one of its 13-grams is in the index under that case.
Only the held-out side is held in memory (the test bucket, a tenth of the cases by default); the training
side streams, so memory does not grow with the number of training rows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from benchgen.lazy_model import LazyModel

NGRAM = 13
MAX_PAIRS = 50
_WORD = re.compile(r"\w+")
RULE = (
    f"{NGRAM}-grams of word tokens (\\w+, case-folded); a training row overlaps a held-out case when they "
    f"share at least one {NGRAM}-gram"
)


@dataclass(frozen=True)
class RowText:
    """The texts of one training row, as the trainer sees them."""

    row_id: str
    split: str
    texts: Sequence[str]


class OverlapPair(LazyModel):
    """A training row and a held-out case that share text."""

    row_id: str
    split: str
    case_id: str
    shared_ngrams: int
    sample: str  # the first shared 13-gram, as tokens joined by spaces


class ContaminationReport(LazyModel):
    n: int = NGRAM
    rule: str = RULE
    rows_checked: int
    held_out_cases_checked: int  # held-out cases with a text of at least n tokens
    held_out_cases_too_short: int  # held-out cases whose text is shorter than n tokens: nothing to compare
    rows_with_overlap: int
    held_out_cases_overlapped: int
    overlap_ratio: float  # rows_with_overlap / rows_checked
    pairs_total: int
    pairs: list[OverlapPair] = Field(default_factory=list)  # the first MAX_PAIRS, in row order

    def summary(self) -> dict[str, Any]:
        """Everything but the pairs: what the manifest and the package record carry."""
        return self.model_dump(mode="json", exclude={"pairs"})


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _key(gram: Sequence[str]) -> bytes:
    # Eight bytes keep the held-out index small; a false match needs a 64-bit collision.
    return hashlib.blake2b(" ".join(gram).encode("utf-8"), digest_size=8).digest()


def ngrams(text: str) -> dict[bytes, tuple[str, ...]]:
    """Each 13-gram of ``text`` by its key (the first occurrence of each)."""
    words = tokens(text)
    grams: dict[bytes, tuple[str, ...]] = {}
    for start in range(len(words) - NGRAM + 1):
        gram = tuple(words[start : start + NGRAM])
        grams.setdefault(_key(gram), gram)
    return grams


def _index(held_out: Iterable[tuple[str, str]]) -> tuple[dict[bytes, set[str]], int, int]:
    index: dict[bytes, set[str]] = {}
    long_enough: set[str] = set()
    seen: set[str] = set()
    for case_id, text in held_out:
        seen.add(case_id)
        grams = ngrams(text)
        if grams:
            long_enough.add(case_id)
        for key in grams:
            index.setdefault(key, set()).add(case_id)
    return index, len(long_enough), len(seen - long_enough)


def contamination_report(
    rows: Iterable[RowText], held_out: Iterable[tuple[str, str]], *, max_pairs: int = MAX_PAIRS
) -> ContaminationReport:
    """Compare the training ``rows`` (streamed once) with the held-out cases' ``(case id, text)``.

    A case may be given several texts (a question and its rewordings): they are all indexed under its id.
    """
    index, checked, too_short = _index(held_out)
    rows_checked = rows_with_overlap = pairs_total = 0
    overlapped: set[str] = set()
    pairs: list[OverlapPair] = []
    for row in rows:
        rows_checked += 1
        shared: dict[str, int] = {}
        first: dict[str, tuple[str, ...]] = {}
        grams: dict[bytes, tuple[str, ...]] = {}
        for text in row.texts:
            for key, gram in ngrams(text).items():
                grams.setdefault(key, gram)
        for key, gram in grams.items():
            for case_id in index.get(key, ()):
                shared[case_id] = shared.get(case_id, 0) + 1
                first.setdefault(case_id, gram)
        if not shared:
            continue
        rows_with_overlap += 1
        overlapped.update(shared)
        for case_id in sorted(shared):
            pairs_total += 1
            if len(pairs) < max_pairs:
                pairs.append(
                    OverlapPair(
                        row_id=row.row_id,
                        split=row.split,
                        case_id=case_id,
                        shared_ngrams=shared[case_id],
                        sample=" ".join(first[case_id]),
                    )
                )
    return ContaminationReport(
        rows_checked=rows_checked,
        held_out_cases_checked=checked,
        held_out_cases_too_short=too_short,
        rows_with_overlap=rows_with_overlap,
        held_out_cases_overlapped=len(overlapped),
        overlap_ratio=round(rows_with_overlap / rows_checked, 6) if rows_checked else 0.0,
        pairs_total=pairs_total,
        pairs=pairs,
    )
