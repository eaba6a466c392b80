"""Which cases a comparison covers: case lists and package manifests, read or refused with a reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchgen.compare.selection import PackageRef, SelectionError, choose_cases, read_case_list, read_package


def test_a_case_list_is_a_json_array_or_one_id_a_line(tmp_path: Path) -> None:
    as_json = tmp_path / "cases.json"
    as_json.write_text('["a", "b"]', encoding="utf-8")
    as_text = tmp_path / "cases.txt"
    as_text.write_text("a\n\n  b  \n", encoding="utf-8")

    assert read_case_list(as_json) == ["a", "b"]
    assert read_case_list(as_text) == ["a", "b"]


def test_a_json_list_of_non_strings_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text("[1, 2]", encoding="utf-8")

    with pytest.raises(SelectionError, match="must hold case ids as strings"):
        read_case_list(path)


def test_a_bare_manifest_gives_the_package_id_and_no_sha256(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(
        json.dumps(
            {"package_id": "p1", "held_out": {"count": 2, "cases": [{"case_id": "a"}, {"case_id": "b"}]}}
        ),
        encoding="utf-8",
    )

    assert read_package(path) == PackageRef(package_id="p1", sha256=None, held_out=("a", "b"))


def test_a_json_file_that_is_no_manifest_says_what_it_needs(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text('{"package_id": "p1"}', encoding="utf-8")

    with pytest.raises(SelectionError, match=r"needs package_id and held_out\.cases\[\]\.case_id"):
        read_package(path)


def test_without_a_list_the_package_gives_its_held_out_cases() -> None:
    package = PackageRef(package_id="p", sha256=None, held_out=("a", "b"))

    assert choose_cases(None, package) == ["a", "b"]
    assert choose_cases(["b"], package) == ["b"]
    assert choose_cases(["z"], None) == ["z"]
    assert choose_cases(None, None) is None


def _manifest(tmp_path: Path, method: str, grader: dict[str, str] | None) -> Path:
    manifest = {
        "package_id": "p1",
        "preparation": {"method": method, "benchmark": "Arithmetic"},
        "held_out": {"count": 1, "cases": [{"case_id": "a"}]},
        **({"grader": grader} if grader else {}),
    }
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return path


def test_a_reinforcement_manifest_names_its_method_and_what_rewarded_the_training(tmp_path: Path) -> None:
    graded = read_package(_manifest(tmp_path, "reinforcement", {"file": "grader.py", "sha256": "ab" * 32}))
    assert graded.method == "reinforcement"
    assert graded.reward == f"the environment's own scoring as grader.py, sha256 {'ab' * 32}"

    program = read_package(_manifest(tmp_path, "reinforcement", {"program": "scoring_program"}))
    assert program.reward == "the environment's scoring program scoring_program"

    demonstration = read_package(_manifest(tmp_path, "demonstration", None))
    assert (demonstration.method, demonstration.reward) == ("demonstration", None)
