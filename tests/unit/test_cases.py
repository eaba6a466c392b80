"""Cases read without being judged (the artifact's and a preparation's reads) keep what json reads."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from pydantic import ValidationError

from benchgen.cases import Case, case_references, read_case_lines, read_cases, validate_case
from benchgen.errors import BundleError


def test_cases_keep_objects_with_string_ids_in_file_order(tmp_path: Path) -> None:
    # given cases.jsonl lines of every kind: blank, not an object, no id, a number id, NaN, a big integer
    path = tmp_path / "cases.jsonl"
    path.write_text(
        '{"id": "b", "question": "Q?", "answer": 7}\n\n[1, 2]\n{"question": "no id"}\n{"id": 5}\n'
        '{"id": "a", "question": NaN, "answer": 123456789012345678901234567890}\n',
        encoding="utf-8",
    )
    # when they are read
    cases = [(case_id, record.question, record.answer) for case_id, record in read_cases(path)]
    # then only objects with a string id remain, with their values as json reads them
    assert [case_id for case_id, _, _ in cases] == ["b", "a"]
    assert cases[0][1:] == ("Q?", 7)
    assert cases[1][2] == 123456789012345678901234567890 and cases[1][1] != cases[1][1]  # NaN
    assert [case_id for case_id, _ in read_case_lines(path)] == ["b", "a"]


def test_a_cases_line_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b",\n', encoding="utf-8")
    with pytest.raises(BundleError, match="line 2 is not valid JSON"):
        list(read_case_lines(path))


def test_case_references_give_each_case_s_text_as_text(tmp_path: Path) -> None:
    # given a case with numbers for text and one with a solution that is not text
    path = tmp_path / "cases.jsonl"
    path.write_text(
        '{"id": "a", "question": 12, "answer": 7, "solution": "Add."}\n{"id": "b", "solution": 3}\n',
        encoding="utf-8",
    )
    # then the question and answer read as text, absent ones as empty, and only a solution that is text
    assert list(case_references(path)) == [("a", "12", "7", "Add."), ("b", "", "", None)]


class _Part(msgspec.Struct, kw_only=True):
    name: str
    size: int = 1


class _PartsCase(Case, kw_only=True):
    """A template's case whose own field holds records (as a rubric holds criteria)."""

    parts: list[_Part] = msgspec.field(default_factory=list)


def test_a_case_whose_field_holds_records_of_its_own_is_read_into_them() -> None:
    read = validate_case({"id": "c1", "parts": [{"name": "wheel", "size": 4}]}, _PartsCase)
    bare = validate_case({"id": "c2"}, _PartsCase)

    assert isinstance(read, _PartsCase)
    assert read.parts == [_Part(name="wheel", size=4)]
    assert isinstance(bare, _PartsCase)
    assert bare.parts == []


def test_a_case_whose_record_is_malformed_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match=r"parts\.0"):
        validate_case({"id": "c1", "parts": [{"size": 4}]}, _PartsCase)
