"""``benchgen compare`` end to end on two runs that ``benchgen score`` wrote for one example bundle."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUNDLE = EXAMPLES / "gsm8k-tr" / "bundle"
SUBMISSION = EXAMPLES / "gsm8k-tr" / "submission" / "predictions.json"
FIXED = 12  # failed cases the "trained" submission answers correctly
BROKEN = 2  # passed cases it now gets wrong


def _verdicts(run: Path) -> dict[str, bool]:
    with zipfile.ZipFile(run / "scoring_output.zip") as archive:
        lines = archive.read("verdicts.jsonl").decode("utf-8").splitlines()
    return {record["case_id"]: record["passed"] for record in map(json.loads, lines)}


def _answered(run: Path) -> int:
    """How many of the run's verdicts say the grader read an answer."""
    with zipfile.ZipFile(run / "scoring_output.zip") as archive:
        lines = archive.read("verdicts.jsonl").decode("utf-8").splitlines()
    return sum(json.loads(line)["answered"] for line in lines)


def _trained_submission(before: Path, target: Path) -> tuple[list[str], list[str]]:
    """The example submission with FIXED wrong answers corrected and BROKEN right ones spoiled."""
    gold = {
        case["id"]: case["answer"]
        for case in map(json.loads, (BUNDLE / "reference" / "cases.jsonl").read_text("utf-8").splitlines())
    }
    passed = _verdicts(before)
    submission = json.loads(SUBMISSION.read_text(encoding="utf-8"))
    fixed = [case_id for case_id, ok in passed.items() if not ok][:FIXED]
    broken = [case_id for case_id, ok in passed.items() if ok][:BROKEN]
    for prediction in submission["predictions"]:
        if prediction["id"] in fixed:
            prediction["prediction_text"] = f"Cevap: {gold[prediction['id']]} <script>alert(1)</script>"
        elif prediction["id"] in broken:
            prediction["prediction_text"] = "Cevap: 1"
    target.write_text(json.dumps(submission, ensure_ascii=False), encoding="utf-8")
    return fixed, broken


def _score(bundle: Path, submission: Path, out: Path, model: str) -> None:
    code = main(
        [
            "score",
            "--bundle",
            str(bundle),
            "--submission",
            str(submission),
            "--out",
            str(out),
            "--model",
            model,
        ]
    )
    assert code == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str], list[str]]:
    """The base model's run of the example and a "trained" model's run of the same cases."""
    root = tmp_path_factory.mktemp("compare")
    before = root / "before"
    _score(BUNDLE, SUBMISSION, before, "base-model")
    fixed, broken = _trained_submission(before, root / "trained.json")
    after = root / "after"
    _score(BUNDLE, root / "trained.json", after, "trained-model")
    return before, after, fixed, broken


def _compare(before: Path, after: Path, out: Path, *options: str) -> int:
    return main(["compare", "--before", str(before), "--after", str(after), "--out", str(out), *options])


def test_compare_prints_the_verdict_and_writes_the_report(
    runs: tuple[Path, Path, list[str], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after, fixed, broken = runs

    code = _compare(before, after, tmp_path / "out")

    out = capsys.readouterr().out
    assert code == 0
    # 35 of 50 passed before (the example's 15 meant to fail); 12 fixed and 2 broken make 45.
    # McNemar: P[X <= 2], X ~ Bin(14, 1/2) = 106 / 16384, doubled = 0.01294
    assert out.splitlines()[:5] == [
        "verdict: improved (12 fixed against 2 broken, McNemar p = 0.01294 < 0.05)",
        "  50 paired cases: accuracy 70.0% -> 90.0% (+20.0 pts)",
        "  fixed 12, broken 2, McNemar exact p = 0.01294",
        # 45 answers read before, 35 right; the rewritten ones all state "Cevap:": 49 read after, 45 right
        "  answer rate 90.0% -> 98.0%; accuracy among answered 77.8% -> 91.8%",
        "  95% bootstrap CI of the difference: [+6.0, +34.0] pts",
    ]
    assert (_answered(before), _answered(after)) == (45, 49)
    assert "  minimum detectable effect at 80% power: 20.5 pts" in out
    assert "not restricted to a package's held-out set (give --package-manifest)" in out
    assert "Training completion alone does not establish benchmark improvement." in out
    report = json.loads((tmp_path / "out" / "comparison.json").read_text(encoding="utf-8"))
    assert [flip["case_id"] for flip in report["fixed"]] == sorted(fixed)
    assert [flip["case_id"] for flip in report["broken"]] == sorted(broken)
    assert (report["before"]["model"], report["after"]["model"]) == ("base-model", "trained-model")
    assert report["fixed"][0]["after"]["response"].endswith("<script>alert(1)</script>")
    page = (tmp_path / "out" / "comparison.html").read_text(encoding="utf-8")
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_compare_on_a_packages_held_out_cases_names_the_package(
    runs: tuple[Path, Path, list[str], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after, fixed, _ = runs
    held_out = [*fixed[:3], "tr-999999"]  # three fixed cases, and one neither run judged
    package = tmp_path / "pkg-123.zip"
    manifest = {
        "kind": "benchgen-package",
        "package_id": "pkg-123",
        "held_out": {"count": 4, "cases": [{"case_id": c, "text_hash": "0" * 64} for c in held_out]},
    }
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))

    code = _compare(before, after, tmp_path / "out", "--package-manifest", str(package))

    assert code == 0
    report = json.loads((tmp_path / "out" / "comparison.json").read_text(encoding="utf-8"))
    assert report["package_id"] == "pkg-123"
    assert report["package_sha256"] == hashlib.sha256(package.read_bytes()).hexdigest()
    assert report["selection"] == "the 4 held-out cases of package pkg-123"
    assert (report["paired_cases"], report["fixed_count"], report["in_neither"]) == (3, 3, ["tr-999999"])
    assert report["verdict"] == "sample too small to tell"
    out = capsys.readouterr().out
    assert "cases left out of the pairing: 1 (listed in the report)" in out
    assert "held-out set" not in out


def test_listed_cases_outside_the_packages_held_out_set_are_refused(
    runs: tuple[Path, Path, list[str], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after, fixed, _ = runs
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps({"package_id": "pkg-9", "held_out": {"cases": [{"case_id": fixed[0], "text_hash": "x"}]}}),
        encoding="utf-8",
    )
    listed = tmp_path / "cases.txt"
    listed.write_text(f"{fixed[0]}\n{fixed[1]}\n", encoding="utf-8")

    code = _compare(
        before, after, tmp_path / "out", "--package-manifest", str(manifest), "--cases", str(listed)
    )

    assert code == 2
    err = capsys.readouterr().err
    assert f"1 listed cases are not held out by package pkg-9 ({fixed[1]})" in err
    assert "may have been trained on" in err
    assert not (tmp_path / "out").exists()


def test_a_stated_sha256_that_is_not_the_zips_is_refused(
    runs: tuple[Path, Path, list[str], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after, fixed, _ = runs
    package = tmp_path / "pkg.zip"
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr(
            "manifest.json", json.dumps({"package_id": "p", "held_out": {"cases": [{"case_id": fixed[0]}]}})
        )

    code = _compare(
        before, after, tmp_path / "out", "--package-manifest", str(package), "--package-sha256", "f" * 64
    )

    assert code == 2
    assert "is not the sha256 of the package zip given" in capsys.readouterr().err


def test_runs_of_different_benchmarks_are_refused(
    runs: tuple[Path, Path, list[str], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, _, _, _ = runs
    other = tmp_path / "other"
    _score(
        EXAMPLES / "gsm8k-en" / "bundle",
        EXAMPLES / "gsm8k-en" / "submission" / "predictions.json",
        other,
        "m",
    )
    capsys.readouterr()

    code = _compare(before, other, tmp_path / "out")

    assert code == 2
    assert "different benchmarks (gsm8k-tr before, gsm8k-en after)" in capsys.readouterr().err


def test_a_folder_that_is_not_a_completed_run_is_refused(
    runs: tuple[Path, Path, list[str], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, _, _, _ = runs
    failed = tmp_path / "failed"
    failed.mkdir()
    (failed / "run.json").write_text(json.dumps({"run_id": "r", "status": "Failed"}), encoding="utf-8")

    assert _compare(before, failed, tmp_path / "out") == 2
    assert "--after" in capsys.readouterr().err
    assert _compare(tmp_path / "nowhere", before, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "--before" in err and "cannot read run.json" in err


def test_a_resample_count_below_one_is_refused(
    runs: tuple[Path, Path, list[str], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after, _, _ = runs

    assert _compare(before, after, tmp_path / "out", "--resamples", "0") == 2
    assert "--resamples must be at least 1, got 0" in capsys.readouterr().err


def test_the_same_runs_give_the_same_report_bytes(
    runs: tuple[Path, Path, list[str], list[str]], tmp_path: Path
) -> None:
    before, after, _, _ = runs

    assert _compare(before, after, tmp_path / "one") == 0
    assert _compare(before, after, tmp_path / "two") == 0

    for name in ("comparison.json", "comparison.html"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
