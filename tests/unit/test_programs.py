"""Running Codabench-style programs, and reading the scores they write."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from benchgen.errors import BundleError, ScoringError
from benchgen.programs import Layout, build_argv, prepare_layout, read_scores, run_program
from benchgen.sandbox.runtimes import runtime_environment
from tests.program_runs import run_in_layout, write_program


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return prepare_layout(tmp_path / "run")


def test_prepare_layout_makes_the_codabench_folders(tmp_path: Path) -> None:
    layout = prepare_layout(tmp_path / "run")

    assert layout.ref == tmp_path / "run" / "input" / "ref"
    assert layout.res == tmp_path / "run" / "input" / "res"
    assert all(p.is_dir() for p in (layout.ref, layout.res, layout.output, layout.shared))


def test_a_scoring_program_writes_scores_that_are_read_back(tmp_path: Path, layout: Layout) -> None:
    # given a program that scores from its input and output arguments
    script = (
        "import json, pathlib, sys\n"
        "ref = pathlib.Path(sys.argv[1], 'ref', 'answer.txt').read_text()\n"
        "pathlib.Path(sys.argv[2], 'scores.json').write_text(json.dumps({'accuracy': float(ref)}))\n"
    )
    program = write_program(tmp_path, script, "python $program/main.py $input $output")
    (layout.ref / "answer.txt").write_text("0.75")

    # when it runs
    result = run_in_layout(program, layout)

    # then it succeeded and its scores are read
    assert result.ok
    assert read_scores(layout.output, ["accuracy"]) == {"accuracy": 0.75}


def test_host_secrets_never_reach_the_program(
    tmp_path: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given credentials in the host environment
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "token")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    script = (
        "import os\n"
        "for name in ('AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'OPENAI_API_KEY', 'PYTHONPATH'):\n"
        "    print(name, os.environ.get(name, 'absent'))\n"
    )

    # when a program prints them
    result = run_in_layout(write_program(tmp_path, script), layout)

    # then none is there: the program's python finds its runtime's packages itself, and its PYTHONPATH
    # is only the startup hook's folder, in its own root
    *secrets, path = result.stdout.splitlines()
    assert secrets == ["AWS_SECRET_ACCESS_KEY absent", "AWS_SESSION_TOKEN absent", "OPENAI_API_KEY absent"]
    assert path.startswith("PYTHONPATH /") and path.endswith("/startup")


def test_the_program_gets_a_private_home_that_is_thrown_away(tmp_path: Path, layout: Layout) -> None:
    script = (
        "import os, pathlib\n"
        "pathlib.Path(os.environ['HOME'], 'notes').write_text('x')\n"
        "print(os.environ['HOME'])\n"
    )

    result = run_in_layout(write_program(tmp_path, script), layout)

    assert result.ok, result.stderr
    assert result.stdout.strip() != os.environ.get("HOME")
    assert not Path(result.stdout.strip(), "notes").exists()


def test_a_program_past_its_time_limit_is_killed(tmp_path: Path, layout: Layout) -> None:
    program = write_program(tmp_path, "import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    started = time.monotonic()

    result = run_in_layout(program, layout, time_limit=1)

    assert result.timed_out
    assert not result.ok
    assert result.stdout == "started\n"
    assert time.monotonic() - started < 10


def test_children_of_a_timed_out_program_are_killed_too(tmp_path: Path, layout: Layout) -> None:
    # given a program whose background child would write a file after two seconds
    marker = tmp_path / "child-was-here"
    script = "import subprocess, sys, time\nsubprocess.Popen([sys.executable, 'child.py'])\ntime.sleep(60)\n"
    program = write_program(tmp_path, script)
    (program / "child.py").write_text(
        f"import pathlib, time\ntime.sleep(2)\npathlib.Path({str(marker)!r}).touch()\n"
    )

    # when the program times out
    result = run_in_layout(program, layout, time_limit=1)
    time.sleep(2.5)

    # then the child went with it
    assert result.timed_out
    assert not marker.exists()


def test_python_means_the_interpreter_of_the_jobs_runtime(tmp_path: Path, layout: Layout) -> None:
    program = write_program(tmp_path, "import sys\nprint(sys.executable)\n", "python3 main.py")

    result = run_in_layout(program, layout)

    assert result.stdout.strip() == str(runtime_environment("minimal").interpreter)
    assert result.command[0] == str(runtime_environment("minimal").interpreter)


def test_the_program_runs_in_a_copy_of_its_own_folder(tmp_path: Path, layout: Layout) -> None:
    program = write_program(
        tmp_path, "import os\nprint(os.getcwd(), sorted(os.listdir()))\n", "python main.py"
    )

    result = run_in_layout(program, layout)

    folder, listing = result.stdout.split(" ", 1)
    assert Path(folder).name == "program"
    assert listing.strip() == "['main.py', 'metadata.yaml']"


def test_relative_folders_are_passed_as_absolute_paths(
    tmp_path: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a program and an output folder named relative to the current directory
    script = "import pathlib, sys\npathlib.Path(sys.argv[1], 'scores.txt').write_text('accuracy: 1')\n"
    write_program(tmp_path, script, "python $program/main.py $output")
    monkeypatch.chdir(tmp_path)

    # when it runs from its own folder
    result = run_program(
        Path("program"),
        input_dir=Path("run/input"),
        output_dir=Path("run/output"),
        shared_dir=Path("run/shared"),
        ref_dir=Path("run/input/ref"),
        res_dir=Path("run/input/res"),
        time_limit=30,
    )

    # then the paths still lead to the right places
    assert result.ok, result.stderr
    assert read_scores(layout.output, ["accuracy"]) == {"accuracy": 1.0}


def test_placeholders_become_the_layout_folders(tmp_path: Path, layout: Layout) -> None:
    # given a command naming every placeholder
    command = (
        "python $program/main.py $input $output $hidden $predictions $shared $tmp "
        "${ingestion_program} $submission_program $unknown"
    )
    program = write_program(tmp_path, "import json, sys\nprint(json.dumps(sys.argv[1:]))\n", command)

    # when it runs with an ingestion program given
    result = run_in_layout(program, layout, extra={"ingestion_program": tmp_path / "ingestion"})

    # then each is replaced by the folder's place in the sandbox, and unknown ones stay as written
    printed = [Path(word) for word in json.loads(result.stdout)]
    (inputs, output, hidden, predictions, shared, tmp, ingestion, *rest) = printed
    base = inputs.parent
    assert (inputs, output, hidden, predictions, shared, tmp) == (
        base / "input",
        base / "output",
        base / "input" / "ref",
        base / "input" / "res",
        base / "shared",
        base / "output",
    )
    assert ingestion == base / "ingestion_program"
    assert rest == [Path("$submission_program"), Path("$unknown")]


def test_a_path_with_spaces_stays_one_argument() -> None:
    argv = build_argv(
        "python $program/score.py '$input' --flag",
        {"program": Path("/p"), "input": Path("/a b")},
        Path("/runtimes/minimal/bin/python"),
    )

    assert argv == ["/runtimes/minimal/bin/python", "/p/score.py", "/a b", "--flag"]


def test_a_metadata_file_without_extension_is_read(tmp_path: Path, layout: Layout) -> None:
    program = write_program(tmp_path, "print('hi')\n", meta="metadata")

    assert run_in_layout(program, layout).stdout == "hi\n"


def test_a_failing_program_reports_its_exit_code_and_stderr(tmp_path: Path, layout: Layout) -> None:
    program = write_program(tmp_path, "import sys\nsys.exit('no predictions found')\n")

    result = run_in_layout(program, layout)

    assert result.returncode == 1
    assert result.stderr == "no predictions found\n"
    assert not result.timed_out


def test_kept_output_is_the_tail_of_what_was_printed(tmp_path: Path, layout: Layout) -> None:
    program = write_program(tmp_path, "print('a' * 5000 + 'THE END')\n")

    result = run_in_layout(program, layout, output_cap=100)

    assert result.stdout.startswith("[... first 4908 bytes cut ...]\n")
    assert result.stdout.endswith("THE END\n")


def test_a_command_that_cannot_start_is_reported(tmp_path: Path, layout: Layout) -> None:
    program = write_program(tmp_path, "", "no-such-tool $input")

    result = run_in_layout(program, layout)

    assert result.returncode == 127
    assert result.stderr.startswith("could not start 'no-such-tool'")


def test_a_program_without_metadata_is_refused(tmp_path: Path, layout: Layout) -> None:
    (tmp_path / "scoring").mkdir()

    with pytest.raises(BundleError) as raised:
        run_in_layout(tmp_path / "scoring", layout)

    assert str(raised.value).startswith("scoring: has no metadata.yaml")


def test_scores_txt_is_read_when_there_is_no_scores_json(tmp_path: Path) -> None:
    (tmp_path / "scores.txt").write_text("accuracy: 0.5\nf1: 1\n")

    assert read_scores(tmp_path, ["accuracy"]) == {"accuracy": 0.5, "f1": 1.0}


def test_scores_json_wins_over_scores_txt(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text('{"accuracy": 0.9}')
    (tmp_path / "scores.txt").write_text("accuracy: 0.1\n")

    assert read_scores(tmp_path, ["accuracy"]) == {"accuracy": 0.9}


def test_missing_scores_fail_with_the_codabench_like_message(tmp_path: Path) -> None:
    with pytest.raises(ScoringError) as raised:
        read_scores(tmp_path, ["accuracy"])

    assert (
        str(raised.value) == "the scoring program wrote no scores.json (nor scores.txt) in its output folder"
    )


def test_keys_that_are_no_column_are_ignored_unless_they_are_numbers(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text(
        '{"accuracy": 0.9, "notes": "ok", "per_class": {"cat": 1}, "speed": 3, "empty": null}'
    )

    assert read_scores(tmp_path, ["accuracy", "f1"]) == {"accuracy": 0.9, "speed": 3.0}


def test_a_boolean_counts_as_one_or_zero(tmp_path: Path) -> None:
    (tmp_path / "scores.txt").write_text("solved: true\nfast: false\n")

    assert read_scores(tmp_path, ["solved", "fast"]) == {"solved": 1.0, "fast": 0.0}


def test_a_column_with_a_value_that_is_no_number_names_its_key(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text('{"accuracy": "excellent", "grade": "excellent"}')

    with pytest.raises(ScoringError) as raised:
        read_scores(tmp_path, ["accuracy"])

    assert (
        str(raised.value)
        == "scores.json: the value of accuracy is 'excellent', not a number; write a number or a boolean"
    )


def test_a_nan_score_is_refused(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text('{"accuracy": NaN}')

    with pytest.raises(ScoringError) as raised:
        read_scores(tmp_path, ["accuracy"])

    assert str(raised.value) == "scores.json: the value of accuracy is nan; scores must be finite numbers"


def test_scores_that_are_not_a_mapping_are_refused(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text("[0.9]")

    with pytest.raises(ScoringError) as raised:
        read_scores(tmp_path, ["accuracy"])

    assert str(raised.value) == 'scores.json must map each score\'s key to a number, e.g. {"accuracy": 0.72}'


def test_invalid_scores_json_names_the_position(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text('{"accuracy": }')

    with pytest.raises(ScoringError) as raised:
        read_scores(tmp_path, ["accuracy"])

    assert str(raised.value) == "scores.json is not valid JSON (line 1, column 14): Expecting value"
