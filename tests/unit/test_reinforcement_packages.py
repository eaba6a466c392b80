"""Reinforcement packages built from a real preparation: no held-out case in them, the same bytes for the
same state, and a grader.py that runs without BenchGen and is called the way each provider calls it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchgen.environment import Environment
from benchgen.finetune.split import in_test_bucket
from benchgen.training.examples import text_hash
from benchgen.training.export_profiles import profiles_for
from benchgen.training.package import PackageRefused, PackageReport, PreparationInfo, build_package
from benchgen.training.preparation import GenerationReport, generate
from benchgen.vocabulary import Method
from tests.unit.finetune_inputs import case, make_env, verdict
from tests.unit.preparation_inputs import make_spec, run_source
from tests.unit.preparations import environment_cases, info, package_of, standard

CASES = 200  # enough train rows for Bedrock's 100
HELD = [case(i) for i in range(CASES) if in_test_bucket(case(i)["id"])]
REINFORCEMENT_PROFILES = profiles_for(Method.REINFORCEMENT)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    return make_env(tmp_path_factory.mktemp("env"), finetune={}, cases=CASES)


def _prepare(env: Environment, root: Path) -> GenerationReport:
    # every case wrong, so the held-out cases are among the mistakes, and the correct share at its widest
    run = run_source(root, "run-1", [verdict(i, passed=False) for i in range(CASES)])
    spec = make_spec(method="reinforcement", settings={"augmentation_factor": 2, "correct_share": 1.0})
    return generate(spec, env, [run], root / "prep")


def _package(env: Environment, root: Path, report: GenerationReport, profile: str) -> PackageReport:
    info = PreparationInfo(
        state_hash=report.state_hash,
        method=Method.REINFORCEMENT,
        environment_id="gsm8k",
        environment_version="1",
        benchmark="GSM8K",
        base_model=report.base_model,
        suggested_hyperparams=report.suggested_hyperparams,
        spec={"method": "reinforcement"},
    )
    cases = [(c["id"], c["question"]) for c in (case(i) for i in range(CASES))]
    return build_package(root / "prep", info, profile, root / "out", cases=cases)


def _members(report: PackageReport) -> dict[str, bytes]:
    with zipfile.ZipFile(report.path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _prompts(row: dict[str, Any]) -> list[str]:
    messages = row.get("prompt") or row["messages"]
    return [message["content"] for message in messages if message["role"] == "user"]


@pytest.mark.parametrize("profile", REINFORCEMENT_PROFILES)
def test_a_reinforcement_package_never_holds_a_held_out_case(
    env: Environment, tmp_path: Path, profile: str
) -> None:
    # given a reinforcement preparation drawn from a run that got every case wrong, held-out ones included
    report = _prepare(env, tmp_path)
    # when it is packaged
    members = _members(_package(env, tmp_path, report, profile))
    # then no training or validation prompt is a held-out question, by text hash or as a part of it
    held_hashes = {text_hash(c["question"]) for c in HELD}
    trained = [
        json.loads(line)
        for name in ("train.jsonl", "validation.jsonl")
        for line in members[name].decode("utf-8").splitlines()
    ]
    assert len(trained) > 100
    for row in trained:
        for prompt in _prompts(row):
            assert text_hash(prompt) not in held_hashes
            assert not any(c["question"] in prompt for c in HELD)
    # and the manifest lists every held-out case by id, which the test file alone holds
    manifest = json.loads(members["manifest.json"])
    assert {c["case_id"] for c in manifest["held_out"]["cases"]} == {c["id"] for c in HELD}
    tested = [json.loads(line) for line in members["test.jsonl"].decode("utf-8").splitlines()]
    assert {text_hash(p) for row in tested for p in _prompts(row)} >= held_hashes


@pytest.mark.parametrize("profile", REINFORCEMENT_PROFILES)
def test_the_same_state_gives_the_same_bytes_grader_included(
    env: Environment, tmp_path: Path, profile: str
) -> None:
    # given the same reinforcement preparation generated twice
    first = _prepare(env, tmp_path / "a")
    second = _prepare(env, tmp_path / "b")
    assert first.state_hash == second.state_hash
    # when each is packaged with the profile
    one = _package(env, tmp_path / "a", first, profile)
    other = _package(env, tmp_path / "b", second, profile)
    # then the packages are the same bytes under the same id, and the manifest pins the grader's bytes
    assert (one.package_id, one.sha256) == (other.package_id, other.sha256)
    assert one.path.read_bytes() == other.path.read_bytes()
    members = _members(one)
    grader = json.loads(members["manifest.json"])["grader"]
    assert grader["sha256"] == hashlib.sha256(members["grader.py"]).hexdigest()
    assert grader["bytes"] == len(members["grader.py"])


def _grader_box(members: dict[str, bytes], folder: Path) -> Path:
    """``folder`` holding the package's grader.py and nothing else."""
    folder.mkdir()
    (folder / "grader.py").write_bytes(members["grader.py"])
    return folder


def _run_grader(folder: Path, *args: str, stdin: str = "") -> str:
    """Python run with ``args`` in the folder of grader.py, isolated: no BenchGen, no site packages."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", *args],
        cwd=folder,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _first_train_row(members: dict[str, bytes]) -> dict[str, Any]:
    row: dict[str, Any] = json.loads(members["train.jsonl"].decode("utf-8").splitlines()[0])
    return row


def _gold(row: dict[str, Any]) -> str:
    fields = row.get("grading") or row["reference_answer"]
    return str(fields["answer"])


# How each provider calls the grader, per its documentation; each prints the rewards of [right, wrong].
CALLS = {
    # TRL: reward_func(completions=..., **columns), conversational completions as one assistant message
    "trl-grpo": "from grader import reward_func\n"
    "print(json.dumps(reward_func(completions=[[{'role': 'assistant', 'content': a}] for a in answers], "
    "grading=[row['grading']] * 2, prompts=[row['prompt']] * 2)))",
    # Bedrock: the Lambda gets a list of samples, the response appended as the assistant turn, an id added
    "bedrock-rft": "from grader import lambda_handler\n"
    "samples = [dict(row, id=str(n), messages=row['messages'] + [{'role': 'assistant', 'content': a}]) "
    "for n, a in enumerate(answers)]\n"
    "out = lambda_handler(samples, None)\n"
    "assert [r['id'] for r in out] == ['0', '1']\n"
    "print(json.dumps([r['aggregate_reward_score'] for r in out]))",
    # OpenAI: grade(sample, item), the model's text as sample['output_text'], the row's keys in item
    "openai-rft": "from grader import grade\n"
    "print(json.dumps([grade({'output_text': a}, row) for a in answers]))",
}


@pytest.mark.parametrize("profile", sorted(CALLS))
def test_the_grader_runs_without_benchgen_as_the_provider_calls_it(
    env: Environment, tmp_path: Path, profile: str
) -> None:
    # given a reinforcement package, its grader.py alone in a folder
    members = _members(_package(env, tmp_path, _prepare(env, tmp_path), profile))
    box = _grader_box(members, tmp_path / "box")
    row = _first_train_row(members)
    answers = [f"Final answer: {_gold(row)}", "Final answer: 77777"]
    # when the provider calls it with the right answer and a wrong one
    # -I leaves the working folder off the path: only the folder holding grader.py is put on it
    setup = (
        "import json, sys\nsys.path.insert(0, '.')\n"
        f"row = json.loads({json.dumps(json.dumps(row))})\nanswers = {answers!r}\n"
    )
    rewards = json.loads(_run_grader(box, "-c", setup + CALLS[profile]))
    # then the right answer earns the full reward and the wrong one none
    assert rewards == [1.0, 0.0]


def test_the_generic_grader_command_scores_completions_from_standard_input(
    env: Environment, tmp_path: Path
) -> None:
    members = _members(_package(env, tmp_path, _prepare(env, tmp_path), "generic"))
    box = _grader_box(members, tmp_path / "box")
    row = _first_train_row(members)
    lines = [
        json.dumps({"grading": row["grading"], "completion": answer})
        for answer in (f"Final answer: {_gold(row)}", "Final answer: 77777")
    ]
    out = _run_grader(box, "grader.py", stdin="\n".join(lines) + "\n")
    assert [json.loads(line) for line in out.splitlines()] == [{"reward": 1.0}, {"reward": 0.0}]
    assert "python grader.py < completions.jsonl" in members["README.md"].decode("utf-8")


@pytest.mark.parametrize("profile", ["sagemaker-sft", "together-dpo", "trl-sft", "openai-preference"])
def test_a_profile_of_another_method_refuses_a_reinforcement_preparation(
    env: Environment, tmp_path: Path, profile: str
) -> None:
    with pytest.raises(PackageRefused) as refused:
        _package(env, tmp_path, _prepare(env, tmp_path), profile)
    assert str(refused.value) == (
        f"profile {profile} does not take reinforcement preparations; for reinforcement choose one of: "
        "trl-grpo, bedrock-rft, openai-rft, generic"
    )


PROGRAM_GRADING = {"template": None, "case_id": "t000"}
CODE_GRADING = {"template": "code", "files": {"a.py": "x = 1\n"}, "test_command": "python -m pytest -q"}


@pytest.mark.parametrize("profile", ["trl-grpo", "bedrock-rft", "openai-rft"])
def test_a_preparation_graded_by_its_own_scoring_program_is_refused_by_the_grader_py_profiles(
    tmp_path: Path, profile: str
) -> None:
    # given a reinforcement preparation of an environment that judges with its own scoring program
    prep = standard(tmp_path / "prep", train=100, grading=PROGRAM_GRADING)
    # when a profile whose grader.py holds the built-in templates' scoring is asked for
    with pytest.raises(PackageRefused) as refused:
        package_of(prep, info(Method.REINFORCEMENT), profile, tmp_path / "out")
    # then it is refused, naming the profile that can grade with the program
    assert str(refused.value) == (
        f"profile {profile} grades with grader.py, which holds the built-in templates' scoring, and this "
        "environment judges its cases with its own scoring program (104 examples, such as t000~00): choose "
        "generic, whose grader command scores completions as a run is scored"
    )


@pytest.mark.parametrize("profile", ["bedrock-rft", "openai-rft"])
def test_a_code_preparation_is_refused_by_the_profiles_whose_grader_runs_at_the_provider(
    tmp_path: Path, profile: str
) -> None:
    # given a reinforcement preparation of a code environment, graded by running each case's tests
    prep = standard(tmp_path / "prep", train=100, grading=CODE_GRADING)
    # when a profile whose grader.py runs on the provider's machines is asked for
    with pytest.raises(PackageRefused) as refused:
        package_of(prep, info(Method.REINFORCEMENT), profile, tmp_path / "out")
    # then it is refused, naming the profiles whose grader runs where the trainer runs
    assert str(refused.value) == (
        f"profile {profile} runs grader.py on the provider's machines, and this environment's code template "
        "grades an answer by running the case's tests, whose command and dependencies are not there (104 "
        "examples, such as t000~00): choose trl-grpo, generic, whose grader.py runs each case's test command "
        "where the trainer runs"
    )


def test_the_generic_profile_names_the_scoring_program_as_the_grader(tmp_path: Path) -> None:
    prep = standard(tmp_path / "prep", grading=PROGRAM_GRADING)
    report = build_package(
        prep,
        info(Method.REINFORCEMENT),
        "generic",
        tmp_path / "out",
        cases=environment_cases(prep),
        scoring_program="scoring_program",
    )
    members = _members(report)
    # no grader.py: the templates' scoring would not be the environment's
    assert "grader.py" not in members
    grader = json.loads(members["manifest.json"])["grader"]
    assert grader["program"] == "scoring_program"
    assert grader["command"] == (
        "benchgen score --bundle <the environment's bundle> --submission predictions.jsonl"
    )
    readme = members["README.md"].decode("utf-8")
    assert "grading runs the environment's scoring program `scoring_program`" in readme
    assert '`{"id": <grading.case_id>, "prediction_text": <completion>}`' in readme


@pytest.mark.parametrize("profile", ["trl-grpo", "generic"])
def test_a_code_package_ships_the_grader_that_runs_the_cases_tests(tmp_path: Path, profile: str) -> None:
    prep = standard(tmp_path / "prep", grading=CODE_GRADING)
    members = _members(package_of(prep, info(Method.REINFORCEMENT), profile, tmp_path / "out"))
    assert members["grader.py"].decode("utf-8").startswith('"""BenchGen\'s reward as one file')
    grader = json.loads(members["manifest.json"])["grader"]
    assert grader["file"] == "grader.py"
    assert grader["note"].endswith("so what the tests import must be installed there")
