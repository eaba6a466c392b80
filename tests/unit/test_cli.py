"""The ``benchgen`` command line, run in-process through ``main([...])``."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from benchgen.bundle.load import load_spec
from benchgen.environment import open_environment
from benchgen.judging import JUDGMENTS_NAME
from benchgen.scoring import registry
from cli.main import main
from cli.progress import ProgressBar
from examplegen import EXAMPLE_SIZES
from tests.codabench_bundles import DOCKER_IMAGE, LABELS, results_folder, write_bundle
from tests.judged import judge_submission

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMES = list(EXAMPLE_SIZES)
RUN_FILES = {
    "prediction_output.zip",
    "scores.json",
    "scoring_output.zip",
    "detailed_results.html",
    "detailed_results.json",
    "run.json",
}
NO_ARTIFACT = "the benchmark's scoring program did not emit one"


def _submission(name: str) -> Path:
    found = sorted((EXAMPLES / name / "submission").glob("predictions.json*"))
    assert len(found) == 1
    return found[0]


def _judged(name: str, out: Path) -> list[str]:
    """For an example graded by a judge model, its simulated judge's judgments, as ``--judgments``."""
    bundle = EXAMPLES / name / "bundle"
    spec = load_spec(bundle)
    if spec.template is None or registry.template(spec.template).asks is None:
        return []
    env = open_environment(bundle, out.parent / "judged-environment")
    judgments = out.parent / JUDGMENTS_NAME
    judge_submission(env, _submission(name), judgments)
    return ["--judgments", str(judgments)]


def _score(name: str, out: Path, *options: str) -> int:
    bundle = EXAMPLES / name / "bundle"
    options = (*_judged(name, out), *options)
    return main(
        [
            "score",
            "--bundle",
            str(bundle),
            "--submission",
            str(_submission(name)),
            "--out",
            str(out),
            *options,
        ]
    )


def _run(out: Path) -> dict[str, object]:
    record: dict[str, object] = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return record


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[int, Path]]:
    """Each example scored once for the module: its exit code and its run folder (only read, never reused)."""
    runs: dict[str, tuple[int, Path]] = {}

    def run(name: str) -> tuple[int, Path]:
        if name not in runs:
            out = tmp_path_factory.mktemp(name) / "run"
            runs[name] = (_score(name, out), out)
        return runs[name]

    return run


def test_bundle_check_accepts_a_good_bundle(capsys: pytest.CaptureFixture[str]) -> None:
    # when a generated example is checked
    code = main(["bundle", "check", str(EXAMPLES / "gsm8k-tr" / "bundle")])

    # then it passes with a one-line summary
    assert code == 0
    assert capsys.readouterr().out.strip() == (
        "OK: GSM8K-TR · template math · 50 cases · finetune yes · runtime legacy (no docker_image named: "
        "Codabench's default, codalab/codalab-legacy:py37)"
    )


def test_bundle_check_summarises_a_custom_program_bundle(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bundle", "check", str(EXAMPLES / "custom-program" / "bundle")])

    assert code == 0
    summary = capsys.readouterr().out.strip()
    assert summary.startswith(
        "OK: Support Intent Classification · custom scoring program · 36 cases · finetune no · runtime "
    )


def test_bundle_check_lists_each_problem_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a bundle whose leaderboard lost its columns and whose cases have a broken line
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / "gsm8k-en" / "bundle", bundle)
    yaml_path = bundle / "competition.yaml"
    text = yaml_path.read_text(encoding="utf-8")
    yaml_path.write_text(text.replace("  columns:\n", "  columns: []\n  unused:\n", 1), encoding="utf-8")
    with (bundle / "reference" / "cases.jsonl").open("a", encoding="utf-8") as cases:
        cases.write("{not json\n")

    # when it is checked
    code = main(["bundle", "check", str(bundle)])

    # then every problem is printed and the command fails
    captured = capsys.readouterr()
    assert code == 1
    lines = captured.out.strip().splitlines()
    assert any("leaderboards.0.columns" in line for line in lines)
    assert any("cases.jsonl: line 41" in line for line in lines)
    assert "2 problems" in captured.err


@pytest.mark.parametrize("name", NAMES)
def test_score_writes_exactly_the_run_files(name: str, scored: Callable[[str], tuple[int, Path]]) -> None:
    # when an example submission is scored
    code, out = scored(name)

    # then the run folder holds the run's files and nothing else: the finetune artifact when the bundle
    # asks for one, the scoring program's log when the bundle brings its own program
    own_program = name == "custom-program"
    expected = RUN_FILES | ({"logs/scoring.log"} if own_program else {"finetune_artifact.zip"})
    written = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert code == 0
    assert written == expected
    run = _run(out)
    assert run["status"] == "Completed"
    assert set(run["files"].values()) == expected - {"run.json"}  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", NAMES)
def test_example_submissions_fail_a_realistic_share(
    name: str, scored: Callable[[str], tuple[int, Path]]
) -> None:
    _, out = scored(name)

    run = _run(out)
    counts = run["counts"]
    assert isinstance(counts, dict)
    if name != "custom-program":  # its own program writes scores only, no per-case verdicts
        assert run["overall_score"] == pytest.approx(counts["passed"] / counts["total_questions"])
    assert 0.65 <= float(str(run["overall_score"])) <= 0.75


def test_run_json_names_its_counts_and_files_as_the_cloud_run_record_does(
    scored: Callable[[str], tuple[int, Path]],
) -> None:
    # given the gsm8k-en example scored on this machine
    _, out = scored("gsm8k-en")
    # when its run.json is read
    run = _run(out)
    # then the counts carry the run record's names (ingest's, then scoring's) and the files their output ids
    assert run["counts"] == {
        "total_questions": 40,
        "answered_questions": 40,
        "missing_ids": 0,
        "duplicate_ids": 0,
        "unknown_ids": 0,
        "total": 40,
        "passed": 28,
        "answered": 37,
    }
    assert run["files"] == {
        "prediction_output": "prediction_output.zip",
        "scores": "scores.json",
        "scoring_output": "scoring_output.zip",
        "detailed_results_json": "detailed_results.json",
        "detailed_results_html": "detailed_results.html",
        "finetune_artifact": "finetune_artifact.zip",
    }


def test_score_names_the_dataset_after_benchmark_model_and_score(tmp_path: Path) -> None:
    _score("gsm8k-tr", tmp_path, "--model", "Qwen2.5-7B")

    run = _run(tmp_path)
    assert str(run["dataset_name"]).startswith("GSM8K-TR · Qwen2.5-7B · 70.0% · ")
    assert run["metrics"] == {"accuracy": 0.7, "exact_match": pytest.approx(0.66), "answer_rate": 0.9}
    assert str(run["run_id"]).startswith("local-")


def test_custom_program_run_reports_why_there_is_no_artifact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _score("custom-program", tmp_path)

    run = _run(tmp_path)
    assert run["dataset_name"] is None
    assert run["artifact_reason"] == NO_ARTIFACT
    assert f"no finetune artifact: {NO_ARTIFACT}" in capsys.readouterr().out


def test_same_inputs_give_the_same_run_id(tmp_path: Path) -> None:
    _score("routing", tmp_path / "first")
    _score("routing", tmp_path / "second")

    assert _run(tmp_path / "first")["run_id"] == _run(tmp_path / "second")["run_id"]


def test_reusing_an_out_folder_drops_files_the_new_run_does_not_make(tmp_path: Path) -> None:
    # given a folder that holds an earlier run with an artifact
    _score("gsm8k-en", tmp_path)
    assert (tmp_path / "finetune_artifact.zip").is_file()

    # when a run without an artifact is written into it
    _score("custom-program", tmp_path)

    # then the old artifact is gone
    assert not (tmp_path / "finetune_artifact.zip").exists()
    assert "finetune_artifact" not in _run(tmp_path)["files"]  # type: ignore[operator]


def test_unusable_submission_fails_the_run_with_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a submission that is not JSON
    broken = tmp_path / "predictions.json"
    broken.write_text("this is not json", encoding="utf-8")
    bundle = EXAMPLES / "gsm8k-en" / "bundle"

    # when it is scored
    code = main(
        ["score", "--bundle", str(bundle), "--submission", str(broken), "--out", str(tmp_path / "run")]
    )

    # then the command exits 2 with the reason, and run.json records the failure
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    run = _run(tmp_path / "run")
    assert run["status"] == "Failed"
    assert run["failure_reason"]
    assert str(run["failure_reason"]) in err


def test_missing_bundle_fails_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "score",
            "--bundle",
            str(tmp_path / "nowhere.zip"),
            "--submission",
            str(_submission("qa")),
            "--out",
            str(tmp_path / "run"),
        ]
    )

    assert code == 2
    assert "nowhere.zip" in capsys.readouterr().err
    assert _run(tmp_path / "run")["status"] == "Failed"


def test_examples_generate_writes_one_environment_of_a_chosen_size(tmp_path: Path) -> None:
    code = main(
        ["examples", "generate", "--env", "gsm8k-en", "--cases", "15", "--out", str(tmp_path), "--zip"]
    )

    assert code == 0
    cases = (tmp_path / "bundle" / "reference" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(cases) == 15
    assert (tmp_path / "bundle.zip").is_file()
    assert (tmp_path / "submission" / "predictions.json").is_file()


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_at_most_once_per_interval() -> None:
    # given a bar on a terminal
    clock = _Clock()
    stream = _Terminal()
    bar = ProgressBar(1_000, stream=stream, interval_s=1.0, clock=clock)

    # when many updates arrive within one interval, then one after it
    for done in range(0, 500, 10):
        bar(done)
    clock.now = 2.0
    bar(1_000)
    bar.close()

    # then it drew once per interval plus the final line
    assert bar.draws == 3
    assert stream.getvalue().endswith("scoring [" + "#" * 30 + "] 100% 1,000/1,000 cases  500 cases/s\n")


def test_progress_bar_stays_quiet_for_small_runs_off_a_terminal() -> None:
    stream = io.StringIO()
    bar = ProgressBar(1_000, stream=stream)

    bar(500)
    bar.close()

    assert stream.getvalue() == ""


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])

    assert exit_info.value.code == 0
    listed = capsys.readouterr().out
    for command in ("bundle", "score", "examples", "local", "demo"):
        assert f"    {command} " in listed


def test_a_submission_folder_is_zipped_as_the_upload_page_would(tmp_path: Path) -> None:
    # given the example submission in a folder rather than a file
    folder = tmp_path / "my-submission"
    folder.mkdir()
    shutil.copy(_submission("gsm8k-en"), folder / "predictions.json")

    # when the folder is scored
    code = main(
        [
            "score",
            "--bundle",
            str(EXAMPLES / "gsm8k-en" / "bundle"),
            "--submission",
            str(folder),
            "--out",
            str(tmp_path / "run"),
        ]
    )

    # then it is scored as the zip of its files, and the run names that zip
    run = _run(tmp_path / "run")
    assert code == 0
    assert run["submission_filename"] == "my-submission.zip"
    assert _score("gsm8k-en", tmp_path / "file") == 0
    assert run["metrics"] == _run(tmp_path / "file")["metrics"]


def _score_folder(bundle: Path, folder: Path, out: Path) -> int:
    return main(["score", "--bundle", str(bundle), "--submission", str(folder), "--out", str(out)])


def test_a_codabench_bundle_scores_a_results_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a bundle as published for Codabench and a folder holding its results file
    bundle = write_bundle(tmp_path / "bundle")
    folder = results_folder(tmp_path / "results", LABELS)

    # when it is scored
    code = _score_folder(bundle, folder, tmp_path / "run")

    # then the run completes with the scoring program's accuracy, and says which runtime its image maps to
    run = _run(tmp_path / "run")
    assert (code, run["status"]) == (0, "Completed")
    assert run["metrics"] == {"accuracy": 1.0, "duration": 0.0}
    assert run["runtime"] == f"legacy (mapped from docker_image {DOCKER_IMAGE})"
    assert str(run["warnings"][0]).startswith(  # type: ignore[index]
        f"docker_image {DOCKER_IMAGE} runs in the legacy runtime, approximate: numbers can differ: "
        "numpy 1.22 -> 1.23"
    )
    err = capsys.readouterr().err
    assert f"runtime: legacy (mapped from docker_image {DOCKER_IMAGE})" in err
    assert f"warning: docker_image {DOCKER_IMAGE} runs in the legacy runtime, approximate" in err


def test_a_first_column_the_scoring_program_leaves_empty_gives_a_completed_run_without_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a Codabench bundle whose scoring program writes a duration and a note, but no accuracy
    program = (
        "import json, os, sys\n"
        "scores = {'duration': 1.5, 'notes': 'labels not checked yet'}\n"
        "json.dump(scores, open(os.path.join(sys.argv[2], 'scores.json'), 'w'))\n"
    )
    bundle = write_bundle(tmp_path / "bundle", score_py=program)
    folder = results_folder(tmp_path / "results", LABELS)

    # when it is scored
    code = _score_folder(bundle, folder, tmp_path / "run")

    # then the run completes; the accuracy column is empty, so the run has no overall score
    run = _run(tmp_path / "run")
    assert (code, run["status"]) == (0, "Completed")
    assert (run["metrics"], run["other_metrics"], run["overall_score"]) == ({"duration": 1.5}, {}, None)
    assert "\n  duration 1.5\n" in capsys.readouterr().out


def test_bundle_check_and_score_agree_on_reference_data_only_the_scoring_program_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a bundle with only a scoring program whose reference data holds a cases.jsonl it reads itself
    bundle = write_bundle(tmp_path / "bundle")
    (bundle / "reference_data" / "cases.jsonl").write_text('{"flower": "setosa"}\n', encoding="utf-8")
    folder = results_folder(tmp_path / "results", LABELS)

    # when it is checked, then scored
    checked = main(["bundle", "check", str(bundle)])
    scored = _score_folder(bundle, folder, tmp_path / "run")

    # then both accept it, and the run is scored by the program
    run = _run(tmp_path / "run")
    assert (checked, scored, run["status"]) == (0, 0, "Completed")
    assert run["metrics"] == {"accuracy": 1.0, "duration": 0.0}
    assert "warning: the cases are not counted: reference/cases.jsonl: line 1" in capsys.readouterr().err


def test_bundle_check_passes_a_codabench_bundle_and_says_which_runtime_its_image_maps_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bundle", "check", str(write_bundle(tmp_path / "bundle", ingestion=True))])

    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0] == (
        "OK: Iris (Codabench layout) · custom scoring program · no cases.jsonl · finetune no · runtime "
        f"legacy (mapped from docker_image {DOCKER_IMAGE})"
    )
    assert out[1].startswith(f"warning: docker_image {DOCKER_IMAGE} runs in the legacy runtime, approx")


def test_bundle_check_refuses_a_time_limit_the_stack_cannot_honour(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a bundle whose phase asks for an hour per program
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLES / "gsm8k-en" / "bundle", bundle)
    yaml_path = bundle / "competition.yaml"
    text = yaml_path.read_text(encoding="utf-8")
    yaml_path.write_text(
        text.replace("execution_time_limit: 600", "execution_time_limit: 3600"), encoding="utf-8"
    )

    # when it is checked
    code = main(["bundle", "check", str(bundle)])

    # then the check names the field, the value and the maximum
    assert code == 1
    assert capsys.readouterr().out.splitlines() == [
        "- competition.yaml: phases.0.execution_time_limit: 3600 s is more than the 780 s a program may run "
        "here (the run steps' own time limit); lower it to 780 or less"
    ]
