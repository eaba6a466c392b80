"""Narrowing a cases.jsonl to a run's case scope: the scoped lines kept byte for byte, in file order."""

from __future__ import annotations

import json
from pathlib import Path

from benchgen.records.runs import CaseScope
from benchgen.steps.case_scope import restrict_cases, unknown_cases_message


def test_only_the_scoped_cases_are_kept_byte_for_byte_and_in_file_order(tmp_path: Path) -> None:
    # Given four cases, one with an integer id, and a scope naming three of them and one unknown id
    lines = [
        json.dumps({"id": "a", "question": "1+1?", "answer": "2"}, ensure_ascii=False),
        json.dumps({"id": "b", "question": "şeker?", "answer": "3"}, ensure_ascii=False),
        json.dumps({"id": 7, "question": "7?", "answer": "7"}),
        json.dumps({"id": "d", "question": "4?", "answer": "4"}),
    ]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")

    # When the file is restricted to the scope
    kept = restrict_cases(cases, {"d", "7", "b", "zz"})

    # Then the scoped cases stay, unchanged and in their order, and the unknown id is not among them
    assert kept == {"b", "7", "d"}
    assert cases.read_text(encoding="utf-8").splitlines() == [lines[1], lines[2], lines[3]]


def test_the_message_for_unknown_cases_names_them_and_says_what_to_do() -> None:
    message = unknown_cases_message(
        CaseScope(key="k", count=9), {"x", "y"}, environment="gsm8k-en version v1"
    )
    assert message == (
        "the run's case scope names 2 of its 9 cases that environment gsm8k-en version v1 does not have "
        "(x, y): scope the run to cases of its own environment version"
    )
