"""``benchgen prepare`` on run folders written by ``benchgen score`` from the shipped examples."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _score(name: str, out: Path, model: str = "m1") -> Path:
    submission = next((EXAMPLES / name / "submission").glob("predictions.json*"))
    code = main(
        [
            "score",
            "--bundle",
            str(EXAMPLES / name / "bundle"),
            "--submission",
            str(submission),
            "--out",
            str(out),
            "--model",
            model,
        ]
    )
    assert code == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The gsm8k-en example scored for two models, and the qa example once (only read, never changed)."""
    root = tmp_path_factory.mktemp("runs")
    return {
        "gsm8k": _score("gsm8k-en", root / "gsm8k"),
        "gsm8k-b": _score("gsm8k-en", root / "gsm8k-b", model="m2"),
        "qa": _score("qa", root / "qa"),
    }


def _prepare(*options: str) -> int:
    return main(["prepare", *options])


def _json(path: Path) -> dict[str, object]:
    value: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return value


def test_prepare_writes_the_preparation_and_prints_its_coverage(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # when a scored run is prepared
    code = _prepare("--run", str(runs["gsm8k"]), "--out", str(tmp_path / "prep"))

    # then the preparation's files are written and its coverage printed as a table, gaps after it
    assert code == 0
    out = tmp_path / "prep"
    assert sorted(p.name for p in out.iterdir()) == [
        "coverage.json",
        "examples.jsonl",
        "held_out.jsonl",
        "preparation.json",
    ]
    record = _json(out / "preparation.json")
    report = record["report"]
    assert isinstance(report, dict)
    lines = (out / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    assert report["example_count"] == len(lines) > 0
    assert report["held_out_count"] == len((out / "held_out.jsonl").read_text().splitlines())
    printed = capsys.readouterr().out
    coverage = _json(out / "coverage.json")
    criteria = coverage["criteria"]
    assert isinstance(criteria, dict)
    assert set(criteria) == {"final-answer", "answer-format", "units"}
    header = next(line for line in printed.splitlines() if line.strip().startswith("criterion"))
    assert header.split() == ["criterion", "train", "validation", "test"]
    for criterion, counts in criteria.items():
        row = next(line.split() for line in printed.splitlines() if line.strip().startswith(criterion + " "))
        assert row == [criterion, str(counts["train"]), str(counts["validation"]), str(counts["test"])]
    gaps = coverage["gaps"]
    assert isinstance(gaps, list)
    for gap in gaps:
        assert f"  - {gap['message']}" in printed
    assert f"state hash {report['state_hash']}" in printed


def test_prepare_with_a_profile_writes_an_exact_package(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # when the same runs are prepared and packaged twice, into two folders
    for name in ("one", "two"):
        code = _prepare("--run", str(runs["gsm8k"]), "--profile", "trl-sft", "--out", str(tmp_path / name))
        assert code == 0
    printed = capsys.readouterr().out

    # then each holds the same zip under the same id, and the printed sha256 is the file's
    one = list((tmp_path / "one").glob("pkg-*.zip"))
    two = list((tmp_path / "two").glob("pkg-*.zip"))
    assert len(one) == len(two) == 1
    assert one[0].name == two[0].name
    assert one[0].read_bytes() == two[0].read_bytes()
    package_id = one[0].stem
    digest = hashlib.sha256(one[0].read_bytes()).hexdigest()
    assert f"package {package_id} (trl-sft)" in printed
    assert f"sha256 {digest}" in printed
    with zipfile.ZipFile(one[0]) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        train = archive.read("train.jsonl").decode("utf-8").splitlines()
    state = _json(tmp_path / "one" / "preparation.json")["report"]
    assert isinstance(state, dict)
    assert manifest["preparation"]["state_hash"] == state["state_hash"]
    assert manifest["files"]["train.jsonl"]["rows"] == len(train) == state["splits"]["train"]
    package = _json(tmp_path / "one" / "preparation.json")["package"]
    assert isinstance(package, dict)
    assert (package["package_id"], package["sha256"], package["file"]) == (package_id, digest, one[0].name)


def test_settings_change_the_preparation(runs: dict[str, Path], tmp_path: Path) -> None:
    # given the same run prepared with the bundle's settings and with a lower factor and other splits
    assert _prepare("--run", str(runs["gsm8k"]), "--out", str(tmp_path / "default")) == 0
    assert (
        _prepare(
            "--run",
            str(runs["gsm8k"]),
            "--factor",
            "2",
            "--splits",
            "60,20,20",
            "--out",
            str(tmp_path / "custom"),
        )
        == 0
    )

    default = _json(tmp_path / "default" / "preparation.json")
    custom = _json(tmp_path / "custom" / "preparation.json")
    assert custom["spec"]["settings"]["augmentation_factor"] == 2  # type: ignore[index]
    assert custom["spec"]["settings"]["splits"] == {"train": 60, "validation": 20, "test": 20}  # type: ignore[index]
    assert custom["report"]["example_count"] < default["report"]["example_count"]  # type: ignore[index]
    assert custom["report"]["state_hash"] != default["report"]["state_hash"]  # type: ignore[index]


def test_prepare_draws_from_several_runs(runs: dict[str, Path], tmp_path: Path) -> None:
    code = _prepare("--run", str(runs["gsm8k"]), "--run", str(runs["gsm8k-b"]), "--out", str(tmp_path / "p"))
    assert code == 0
    record = _json(tmp_path / "p" / "preparation.json")
    spec = record["spec"]
    assert isinstance(spec, dict)
    assert len(spec["run_ids"]) == 2


def test_a_profile_that_refuses_the_method_stops_before_generating(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _prepare(
        "--run",
        str(runs["gsm8k"]),
        "--method",
        "preference",
        "--profile",
        "bedrock-conversation",
        "--out",
        str(tmp_path / "prep"),
    )

    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "error: profile bedrock-conversation does not take preference preparations; for preference "
        "choose one of: openai-preference, trl-dpo, sagemaker-dpo, together-dpo"
    )
    assert not (tmp_path / "prep").exists()


def test_runs_of_different_bundles_are_refused(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _prepare("--run", str(runs["gsm8k"]), "--run", str(runs["qa"]), "--out", str(tmp_path / "p"))

    assert code == 2
    err = capsys.readouterr().err
    assert "the runs were scored against different bundles" in err
    assert str(EXAMPLES / "qa" / "bundle") in err


def test_a_failed_run_is_refused_with_its_reason(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a copy of a run folder whose run failed
    failed = tmp_path / "failed"
    shutil.copytree(runs["gsm8k"], failed)
    record = _json(failed / "run.json")
    record.update(status="Failed", failure_reason="scores.json is missing")
    (failed / "run.json").write_text(json.dumps(record), encoding="utf-8")

    code = _prepare("--run", str(failed), "--out", str(tmp_path / "p"))

    assert code == 2
    assert "is Failed (scores.json is missing); prepare from completed runs only" in capsys.readouterr().err


def test_a_folder_without_a_run_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _prepare("--run", str(tmp_path), "--out", str(tmp_path / "p"))

    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {tmp_path} holds no run.json; give a folder `benchgen score` wrote"
    )


def test_split_shares_must_sum_to_100(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _prepare("--run", str(runs["gsm8k"]), "--splits", "80,10,5", "--out", str(tmp_path / "p"))

    assert exited.value.code == 2
    assert "make 95; give percentages that sum to 100" in capsys.readouterr().err


def test_a_refused_package_keeps_the_preparation_and_says_what_to_change(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # when a preparation of a few dozen rows is packaged for Llama 3.1 on Bedrock (100 rows at least)
    out = tmp_path / "prep"
    code = _prepare("--run", str(runs["gsm8k"]), "--profile", "bedrock-prompt-completion", "--out", str(out))

    # then no package is written, the refusal says why, and the preparation stays for another profile
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: profile bedrock-prompt-completion needs at least 100 train and validation rows"
    )
    assert "raise the augmentation factor" in err
    assert not list(out.glob("pkg-*.zip"))
    assert (out / "examples.jsonl").is_file() and (out / "preparation.json").is_file()


def test_a_preference_package_sets_the_gold_answer_against_the_models_own(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "prep"
    code = _prepare(
        "--run", str(runs["gsm8k"]), "--method", "preference", "--profile", "trl-dpo", "--out", str(out)
    )

    assert code == 0
    examples = [
        json.loads(line) for line in (out / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    (package,) = out.glob("pkg-*.zip")
    with zipfile.ZipFile(package) as archive:
        rows = [json.loads(line) for line in archive.read("train.jsonl").decode("utf-8").splitlines()]
    train = [e for e in examples if e["split"] == "train"]
    assert len(rows) == len(train) > 0
    for row, example in zip(rows, train, strict=True):
        assert row["chosen"] == [{"role": "assistant", "content": example["chosen"]}]
        assert row["rejected"] == [{"role": "assistant", "content": example["rejected"]}]
        assert example["rejected"] != example["chosen"]


def test_an_unknown_criterion_is_refused_naming_the_valid_ones(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _prepare("--run", str(runs["gsm8k"]), "--criteria", "nope,units", "--out", str(tmp_path / "p"))

    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "criteria nope" in err and "final-answer" in err
    assert not (tmp_path / "p" / "examples.jsonl").exists()


def test_compare_reads_a_prepared_package_and_pairs_its_held_out_cases(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    # given a package prepared from one model's run
    out = tmp_path / "prep"
    assert _prepare("--run", str(runs["gsm8k"]), "--profile", "trl-sft", "--out", str(out)) == 0
    (package,) = out.glob("pkg-*.zip")
    with zipfile.ZipFile(package) as archive:
        held_out = json.loads(archive.read("manifest.json"))["held_out"]

    # when another run is compared with it on the package's held-out cases
    code = main(
        [
            "compare",
            "--before",
            str(runs["gsm8k"]),
            "--after",
            str(runs["gsm8k-b"]),
            "--package-manifest",
            str(package),
            "--out",
            str(tmp_path / "compare"),
        ]
    )

    # then the comparison names the package and pairs exactly its held-out cases
    assert code == 0
    comparison = _json(tmp_path / "compare" / "comparison.json")
    assert comparison["package_id"] == package.stem
    assert comparison["package_sha256"] == hashlib.sha256(package.read_bytes()).hexdigest()
    assert comparison["paired_cases"] == held_out["count"] == len(held_out["cases"]) > 0


def test_the_gsm8k_tr_package_checks_every_held_out_case_for_contamination(tmp_path: Path) -> None:
    # given the gsm8k-tr example: 4 held-out cases, only 1 of them with a test row (the model got it wrong)
    run = _score("gsm8k-tr", tmp_path / "run")
    code = _prepare("--run", str(run), "--profile", "trl-sft", "--out", str(tmp_path / "prep"))
    assert code == 0

    # then all 4 are compared, and 5 of the 73 training rows share 13 words with 2 of them
    with zipfile.ZipFile(next((tmp_path / "prep").glob("pkg-*.zip"))) as archive:
        report = json.loads(archive.read("contamination.json"))
        held_out = json.loads(archive.read("manifest.json"))["held_out"]["count"]
    assert (held_out, report["held_out_cases_checked"], report["held_out_cases_too_short"]) == (4, 4, 0)
    assert (report["rows_checked"], report["rows_with_overlap"], report["held_out_cases_overlapped"]) == (
        73,
        5,
        2,
    )


def test_prepare_reinforcement_packages_prompts_with_grading_and_the_grader(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    # when the qa run is prepared for reinforcement, every correct case mixed in, and packaged for TRL GRPO
    code = _prepare(
        "--run",
        str(runs["qa"]),
        "--method",
        "reinforcement",
        "--correct-share",
        "1",
        "--profile",
        "trl-grpo",
        "--out",
        str(tmp_path / "prep"),
    )
    # then the package holds prompt rows with the qa grading fields, and the grader beside them
    assert code == 0
    (package,) = (tmp_path / "prep").glob("pkg-*.zip")
    with zipfile.ZipFile(package) as archive:
        rows = [json.loads(line) for line in archive.read("train.jsonl").decode("utf-8").splitlines()]
        assert "def reward_func(" in archive.read("grader.py").decode("utf-8")
        assert "reward_funcs=reward_func" in archive.read("README.md").decode("utf-8")
    assert rows
    assert all(set(row) == {"prompt", "grading"} and row["grading"]["template"] == "qa" for row in rows)
    record = _json(tmp_path / "prep" / "preparation.json")
    spec = record["spec"]
    assert isinstance(spec, dict)
    assert spec["method"] == "reinforcement"


def test_correct_share_is_refused_for_a_demonstration_preparation(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _prepare("--run", str(runs["gsm8k"]), "--correct-share", "0.5", "--out", str(tmp_path / "prep"))
    assert code != 0
    assert "only a reinforcement preparation mixes in" in capsys.readouterr().err
