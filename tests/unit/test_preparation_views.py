"""The Dataset view: examples filtered by split, criterion and kind, paged by line index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from benchgen.environment import Environment
from benchgen.training.examples import EXAMPLES_NAME, PreparedExample
from benchgen.training.preparation import generate
from benchgen.training.views import page_examples
from tests.unit.finetune_inputs import forty_wrong_of_fifty, make_env
from tests.unit.preparation_inputs import make_spec, read_examples, run_source


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prep")
    env: Environment = make_env(
        root / "env",
        finetune={"pool": {"path": "pool.jsonl", "share": 0.25}},
        pool_rows=30,
        criteria=[{"id": "arithmetic"}, {"id": "units"}],
    )
    verdicts = forty_wrong_of_fifty()
    for v in verdicts[::4]:
        v["criteria"] = [{"id": "units", "passed": False}]
    generate(make_spec(), env, [run_source(root, "run-1", verdicts)], root / "out")
    return root / "out"


def lines(prepared: Path) -> list[bytes]:
    return (prepared / EXAMPLES_NAME).read_bytes().splitlines()


def all_pages(prepared: Path, limit: int, **filters: str | None) -> list[list[PreparedExample]]:
    pages: list[list[PreparedExample]] = []
    start: int | None = 0
    while start is not None:
        page, start = page_examples(
            lines(prepared),
            split=filters.get("split"),
            criterion=filters.get("criterion"),
            kind=filters.get("kind"),
            start=start,
            limit=limit,
        )
        pages.append(page)
    return pages


def test_pages_walk_every_example_once_in_file_order(prepared: Path) -> None:
    pages = all_pages(prepared, 64)
    everything = read_examples(prepared)
    assert [len(p) for p in pages] == [64, 64, 64, 18]
    assert [e for page in pages for e in page] == everything


def test_the_next_start_points_at_the_next_matching_line(prepared: Path) -> None:
    page, start = page_examples(lines(prepared), split="test", criterion=None, kind=None, start=0, limit=3)
    assert [e.split.value for e in page] == ["test"] * 3
    assert start is not None
    assert read_examples(prepared)[start].split.value == "test"
    assert read_examples(prepared)[start] not in page


@pytest.mark.parametrize(
    ("filters", "keep"),
    [
        ({"split": "validation"}, lambda e: e.split.value == "validation"),
        ({"kind": "pool"}, lambda e: e.kind.value == "pool"),
        ({"criterion": "units"}, lambda e: "units" in e.criteria),
        (
            {"split": "train", "kind": "augmented", "criterion": "arithmetic"},
            lambda e: e.split.value == "train" and e.kind.value == "augmented" and "arithmetic" in e.criteria,
        ),
    ],
)
def test_filters_keep_exactly_the_matching_examples(
    prepared: Path, filters: dict[str, str], keep: Callable[[PreparedExample], bool]
) -> None:
    expected = [e for e in read_examples(prepared) if keep(e)]
    assert expected
    assert [e for page in all_pages(prepared, 7, **filters) for e in page] == expected


def test_a_filter_nothing_matches_gives_one_empty_last_page(prepared: Path) -> None:
    assert page_examples(lines(prepared), split=None, criterion="geometry", kind=None, start=0, limit=5) == (
        [],
        None,
    )


def test_a_start_past_the_end_gives_an_empty_last_page(prepared: Path) -> None:
    assert page_examples(lines(prepared), split=None, criterion=None, kind=None, start=10_000, limit=5) == (
        [],
        None,
    )


@pytest.mark.parametrize(("start", "limit"), [(-1, 5), (0, 0)])
def test_a_negative_start_or_empty_limit_is_refused(prepared: Path, start: int, limit: int) -> None:
    with pytest.raises(ValueError, match="start must be 0 or more and limit 1 or more"):
        page_examples(lines(prepared), split=None, criterion=None, kind=None, start=start, limit=limit)
