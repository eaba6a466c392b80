"""A document nested 100,000 deep gets one clear message from every parser, never a RecursionError."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from benchgen.bundle.yaml_file import read_yaml
from benchgen.environment import case_problems
from benchgen.errors import BundleError, ScoringError
from benchgen.jsonhead import pick_top_level_fields
from benchgen.ports.pages import InvalidNextToken, decode_token
from benchgen.programs import load_command, read_scores
from benchgen.scoring.join import iter_cases

DEEP = "[" * 100_000 + "]" * 100_000
TOO_DEEP = "is nested too deeply"


def test_competition_yaml_nested_too_deep_is_a_bundle_problem(tmp_path: Path) -> None:
    path = tmp_path / "competition.yaml"
    path.write_text(f"title: {DEEP}\n", encoding="utf-8")

    with pytest.raises(BundleError) as caught:
        read_yaml(path)

    assert str(caught.value).startswith(f"competition.yaml: {TOO_DEEP}")


@pytest.mark.parametrize("name", ["scores.json", "scores.txt"])
def test_scores_nested_too_deep_fail_the_scoring_with_the_file_named(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(DEEP, encoding="utf-8")

    with pytest.raises(ScoringError) as caught:
        read_scores(tmp_path, ["accuracy"])

    assert str(caught.value).startswith(f"{name} {TOO_DEEP}")


def test_a_case_nested_too_deep_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "question": "q", "answer": "1"}\n' + DEEP + "\n", encoding="utf-8")

    with pytest.raises(BundleError) as caught:
        list(iter_cases(path))

    assert str(caught.value).startswith(f"reference/cases.jsonl: line 2 {TOO_DEEP}")
    [problem] = case_problems(path, label="ref/cases.jsonl")
    assert problem.startswith(f"ref/cases.jsonl: line 2: {TOO_DEEP}")


def test_the_detailed_results_head_nested_too_deep_is_a_value_error() -> None:
    document = ('{"summary": ' + DEEP + "}").encode()

    with pytest.raises(ValueError, match=TOO_DEEP):
        pick_top_level_fields(iter([document]), ["summary"])


def test_a_program_metadata_file_nested_too_deep_is_a_bundle_problem(tmp_path: Path) -> None:
    (tmp_path / "metadata.yaml").write_text(f"command: {DEEP}\n", encoding="utf-8")

    with pytest.raises(BundleError) as caught:
        load_command(tmp_path, label="scoring_program")

    assert str(caught.value).startswith(f"scoring_program/metadata.yaml: {TOO_DEEP}")


def test_a_next_token_nested_too_deep_is_an_invalid_token() -> None:
    token = base64.urlsafe_b64encode(DEEP[:20_000].encode() + b"]" * 10_000).decode()

    with pytest.raises(InvalidNextToken):
        decode_token(token, ("created_at", "run_id"))
