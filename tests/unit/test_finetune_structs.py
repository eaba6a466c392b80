"""The artifact's plain records read a case line exactly as json did before them."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.errors import BundleError
from benchgen.finetune.structs import read_case_lines, read_cases


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
