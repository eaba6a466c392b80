"""The example generator: seeded, streaming, with submissions that fail a realistic share of cases."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from benchgen.admission import check_bundle
from benchgen.scoring.patch import PatchError, apply_diff, materialise, parse_diff
from examplegen import ENVIRONMENTS, generate_environment, write_bundle_zip

TURKISH_CONNECTORS = ("ardından", "sonra", "daha sonra", "ayrıca", "bunun yanında")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _predictions(path: Path) -> list[dict[str, object]]:
    if path.suffix == ".jsonl":
        return _lines(path)
    document = json.loads(path.read_text(encoding="utf-8"))
    predictions: list[dict[str, object]] = document["predictions"]
    return predictions


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_same_seed_gives_the_same_bytes(name: str, tmp_path: Path) -> None:
    # given two runs with one seed
    generate_environment(name, tmp_path / "first", cases=25, seed=7)
    generate_environment(name, tmp_path / "second", cases=25, seed=7)

    # then every file is identical
    assert _files(tmp_path / "first") == _files(tmp_path / "second")


def test_another_seed_gives_other_cases(tmp_path: Path) -> None:
    first = generate_environment("gsm8k-en", tmp_path / "a", cases=20, seed=1)
    second = generate_environment("gsm8k-en", tmp_path / "b", cases=20, seed=2)

    first_cases = (first.bundle_dir / "reference" / "cases.jsonl").read_text(encoding="utf-8")
    second_cases = (second.bundle_dir / "reference" / "cases.jsonl").read_text(encoding="utf-8")
    assert first_cases != second_cases


@pytest.mark.parametrize("name", ENVIRONMENTS)
@pytest.mark.parametrize("size", [10, 10_000])
def test_every_case_gets_one_prediction_and_a_realistic_share_fails(
    name: str, size: int, tmp_path: Path
) -> None:
    # when an environment of this size is generated
    made = generate_environment(name, tmp_path, cases=size, seed=11)

    # then the cases and predictions line up one to one
    cases = _lines(made.bundle_dir / "reference" / "cases.jsonl")
    predictions = _predictions(made.submission_path)
    assert len(cases) == size
    assert [c["id"] for c in cases] == [p["id"] for p in predictions]
    assert len({c["id"] for c in cases}) == size
    # and between a quarter and a third of them are meant to fail
    assert 0.25 <= made.fail_share <= 0.35


def test_wrong_routes_are_visible_in_the_submission(tmp_path: Path) -> None:
    # given a routing environment
    made = generate_environment("routing", tmp_path, cases=2_000, seed=3)

    # when the predicted routes are compared with the gold ones
    cases = _lines(made.bundle_dir / "reference" / "cases.jsonl")
    predictions = _predictions(made.submission_path)
    wrong = sum(c["route"] != p["route"] for c, p in zip(cases, predictions, strict=True))

    # then the submission misroutes as many cases as the generator planned, within 25-35%
    assert wrong == made.failing
    assert 500 <= wrong <= 700


def test_prediction_cost_is_the_cost_of_the_chosen_route(tmp_path: Path) -> None:
    made = generate_environment("routing", tmp_path, cases=50, seed=5)

    cases = _lines(made.bundle_dir / "reference" / "cases.jsonl")
    predictions = _predictions(made.submission_path)

    for case, prediction in zip(cases, predictions, strict=True):
        costs = case["costs"]
        assert isinstance(costs, dict)
        assert prediction["cost_usd"] == costs[str(prediction["route"])]


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_generated_bundles_pass_the_bundle_check(name: str, tmp_path: Path) -> None:
    made = generate_environment(name, tmp_path, cases=30, seed=4)

    assert check_bundle(made.bundle_dir) == []


def test_custom_program_environment_has_a_scoring_program_and_no_finetune(tmp_path: Path) -> None:
    # when the custom-program environment is generated
    made = generate_environment("custom-program", tmp_path, cases=10, seed=9)

    # then its competition.yaml names a scoring program and has no finetune key
    competition = yaml.safe_load((made.bundle_dir / "competition.yaml").read_text(encoding="utf-8"))
    assert "finetune" not in competition
    assert "template" not in competition
    assert competition["tasks"][0]["scoring_program"] == "scoring_program"
    metadata = yaml.safe_load((made.bundle_dir / "scoring_program" / "metadata.yaml").read_text())
    assert metadata["command"] == "python $program/score.py $input $output"
    assert made.has_finetune is False


def test_template_environments_declare_leaderboard_columns_per_template(tmp_path: Path) -> None:
    expected = {
        "gsm8k-tr": ["accuracy", "exact_match", "answer_rate"],
        "gsm8k-en": ["accuracy", "exact_match", "answer_rate"],
        "qa": ["exact_match", "f1", "answer_rate"],
        "routing": ["accuracy", "total_cost_usd", "avg_cost_usd_per_task"],
        "code": ["resolved_rate", "patch_generated_rate"],
        "judge": ["accuracy", "mean_score", "unjudged"],
    }
    for name, keys in expected.items():
        made = generate_environment(name, tmp_path / name, cases=10, seed=1)
        competition = yaml.safe_load((made.bundle_dir / "competition.yaml").read_text(encoding="utf-8"))
        assert [c["key"] for c in competition["leaderboards"][0]["columns"]] == keys
        assert 2 <= len(competition["criteria"]) <= 3


def test_turkish_questions_use_the_connectors_the_augmentation_rewrites(tmp_path: Path) -> None:
    made = generate_environment("gsm8k-tr", tmp_path, cases=200, seed=8)

    competition = yaml.safe_load((made.bundle_dir / "competition.yaml").read_text(encoding="utf-8"))
    pairs = competition["finetune"]["augmentation"]["connectors"]
    assert ["ardından", "sonra"] in pairs
    for case in _lines(made.bundle_dir / "reference" / "cases.jsonl"):
        assert any(connector in str(case["question"]) for connector in TURKISH_CONNECTORS)
    assert (made.bundle_dir / "pool" / "pool.jsonl").is_file()


def test_unanswerable_qa_cases_have_no_answers_and_a_high_no_answer_probability(tmp_path: Path) -> None:
    made = generate_environment("qa", tmp_path, cases=300, seed=6)

    cases = _lines(made.bundle_dir / "reference" / "cases.jsonl")
    predictions = _predictions(made.submission_path)
    unanswerable = [(c, p) for c, p in zip(cases, predictions, strict=True) if c["answers"] == []]

    assert 60 <= len(unanswerable) <= 140
    abstained = [p for _, p in unanswerable if p["prediction_text"] == ""]
    assert abstained
    assert all(float(str(p["no_answer_probability"])) > 0.5 for p in abstained)


def test_gold_code_patches_fix_the_bug_and_wrong_ones_do_not(tmp_path: Path) -> None:
    made = generate_environment("code", tmp_path / "gen", cases=10, seed=2)
    cases = _lines(made.bundle_dir / "reference" / "cases.jsonl")
    predictions = _predictions(made.submission_path)

    for number, (case, prediction) in enumerate(zip(cases, predictions, strict=True)):
        repo = tmp_path / f"repo{number}"
        files = case["files"]
        assert isinstance(files, dict)
        materialise(files, repo)
        try:
            apply_diff(parse_diff(str(prediction["prediction_text"])), repo)
            applied = True
        except PatchError:
            applied = False
        tests = subprocess.run(
            [sys.executable, "-m", "unittest", "-q"], cwd=repo, capture_output=True, check=False
        )
        resolved = applied and tests.returncode == 0
        assert resolved == (prediction["prediction_text"] == case["answer"]), case["id"]


def test_bundle_zip_is_byte_stable_with_files_at_the_root(tmp_path: Path) -> None:
    made = generate_environment("gsm8k-tr", tmp_path / "gen", cases=10, seed=1)

    first = write_bundle_zip(made.bundle_dir, tmp_path / "one.zip")
    second = write_bundle_zip(made.bundle_dir, tmp_path / "two.zip")

    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
    assert names == sorted(names)
    assert "competition.yaml" in names
    assert "reference/cases.jsonl" in names
    assert check_bundle(first) == []


def test_predictions_json_carries_metadata(tmp_path: Path) -> None:
    made = generate_environment("gsm8k-en", tmp_path, cases=12, seed=1)

    document = json.loads(made.submission_path.read_text(encoding="utf-8"))

    assert len(document["predictions"]) == 12
    assert document["metadata"]["model"] == "example-model-7b"


def test_unknown_environment_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="choose one of: gsm8k-tr, gsm8k-en"):
        generate_environment("chess", tmp_path, cases=10, seed=1)
