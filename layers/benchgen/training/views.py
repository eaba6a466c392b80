"""The Dataset view: a preparation's examples, filtered and paged straight from its examples file.

A page is addressed by the index of the line it starts at, so paging needs no state besides that number,
and reading a page parses only the lines from there to the first row of the next page.
"""

from __future__ import annotations

from collections.abc import Iterable

from benchgen.training.examples import PreparedExample


def _matches(example: PreparedExample, split: str | None, criterion: str | None, kind: str | None) -> bool:
    return (
        (split is None or example.split.value == split)
        and (kind is None or example.kind.value == kind)
        and (criterion is None or criterion in example.criteria)
    )


def page_examples(
    lines: Iterable[bytes],
    *,
    split: str | None,
    criterion: str | None,
    kind: str | None,
    start: int,
    limit: int,
) -> tuple[list[PreparedExample], int | None]:
    """Up to ``limit`` examples that pass the filters, from line ``start`` on, and the line index the next
    page starts at (that of the next matching example), or None when no more match."""
    if start < 0 or limit < 1:
        raise ValueError(f"start must be 0 or more and limit 1 or more (got start {start}, limit {limit})")
    page: list[PreparedExample] = []
    for index, line in enumerate(lines):
        if index < start or not line.strip():
            continue
        example = PreparedExample.model_validate_json(line)
        if not _matches(example, split, criterion, kind):
            continue
        if len(page) == limit:
            return page, index
        page.append(example)
    return page, None
