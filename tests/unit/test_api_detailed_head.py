"""Reading the head of detailed_results.json as a stream, without decoding (or even reading) its cases."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from benchgen.jsonhead import pick_top_level_fields

WANTED = {"title", "summary", "metrics", "breakdowns"}


def chunked(text: str, size: int) -> Iterator[bytes]:
    data = text.encode("utf-8")
    for start in range(0, len(data), size):
        yield data[start : start + size]


def document(cases_first: bool = False) -> str:
    head = {
        "title": "GSM8K — «math»",
        "metrics": [{"title": "Accuracy", "key": "accuracy", "value": 0.725, "precision": 2}],
        "summary": {"total": 3, "passed": 2},
        "breakdowns": {"difficulty": {"easy": {"accuracy": 1.0, "total": 2}}},
    }
    cases = [
        {"id": "c1", "prediction": 'he said "}" and {', "gold": "4\\\\"},
        {"id": "c2", "prediction": None, "score": 1e-3, "flags": [True, False, [1, {"x": []}]]},
    ]
    body = {"cases": cases, **head} if cases_first else {**head, "cases": cases}
    return json.dumps(body, ensure_ascii=False, indent=1)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 20])
def test_the_head_is_read_whatever_the_chunk_size(size: int) -> None:
    expected = {name: value for name, value in json.loads(document()).items() if name in WANTED}
    assert pick_top_level_fields(chunked(document(), size), WANTED) == expected


@pytest.mark.parametrize("size", [1, 5, 1 << 20])
def test_cases_before_the_head_are_skipped(size: int) -> None:
    found = pick_top_level_fields(chunked(document(cases_first=True), size), WANTED)
    assert found["summary"] == {"total": 3, "passed": 2}
    assert found["title"] == "GSM8K — «math»"
    assert "cases" not in found


def test_reading_stops_once_every_field_is_found() -> None:
    # given a document whose cases come from a stream that fails if anyone reads it
    head = '{"title": "t", "summary": {"total": 1}, "metrics": [], "breakdowns": {}, "cases": ['

    def stream() -> Iterator[bytes]:
        yield head.encode()
        raise AssertionError("the cases were read")

    # then the head is returned without touching the rest
    assert pick_top_level_fields(stream(), WANTED)["summary"] == {"total": 1}


def test_a_number_split_between_chunks_is_read_whole() -> None:
    found = pick_top_level_fields(iter([b'{"summary": 12', b'34, "other": 5}']), {"summary"})
    assert found == {"summary": 1234}


def test_fields_that_are_absent_are_simply_missing() -> None:
    assert pick_top_level_fields(chunked('{"other": [1, 2], "n": null}', 3), WANTED) == {}


def test_a_truncated_document_is_an_error() -> None:
    with pytest.raises(ValueError):
        pick_top_level_fields(chunked('{"cases": [{"id": "c1"', 4), WANTED)


def test_a_document_that_is_not_an_object_is_an_error() -> None:
    with pytest.raises(ValueError, match="expected '\\{'"):
        pick_top_level_fields(chunked("[1, 2]", 4), WANTED)
