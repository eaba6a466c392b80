"""A task scored by its own program: the program, run on completions as scoring runs it, gives each its
reward, the verdict the run gives the same answer."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from benchgen.environment import Environment, open_environment
from benchgen.errors import ScoringError
from benchgen.ingest import ingest
from benchgen.outputs import RunOutput
from benchgen.scoring.engine import score_predictions
from benchgen.scoring.join import iter_cases
from benchgen.scoring.reward import grading_fields, program_reward
from benchgen.verdicts import VERDICTS_NAME, Verdict

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom-program"
SUBMISSION = EXAMPLE / "submission" / "predictions.json"
# The example's own program, and then one verdict per case, as a program that tells its cases writes them.
WITH_VERDICTS = """import json, os, sys

import intent

intent.main(sys.argv[1], sys.argv[2])
predicted = intent.read_predictions(os.path.join(sys.argv[1], "res"))
with open(os.path.join(sys.argv[1], "ref", "cases.jsonl"), encoding="utf-8") as cases, open(
    os.path.join(sys.argv[2], "verdicts.jsonl"), "w", encoding="utf-8"
) as verdicts:
    for line in cases:
        case = json.loads(line)
        guess = predicted.get(case["id"], "")
        right = guess == case["answer"]
        verdict = {"case_id": case["id"], "gold": case["answer"], "prediction": guess or None}
        verdicts.write(json.dumps({**verdict, "passed": right, "score": float(right)}) + "\\n")
"""


def _telling_bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE / "bundle", bundle)
    program = bundle / "scoring_program"
    (program / "score.py").rename(program / "intent.py")
    (program / "score.py").write_text(WITH_VERDICTS, encoding="utf-8")
    return bundle


def _answers() -> dict[str, str]:
    records = json.loads(SUBMISSION.read_text(encoding="utf-8"))["predictions"]
    return {record["id"]: record["prediction_text"] for record in records}


def _run_verdicts(env: Environment, work: Path) -> dict[str, Verdict]:
    ingested = ingest(env, SUBMISSION, work / "out", workdir=work / "ingest")
    score_predictions(env, ingested.prediction_output, work / "out", workdir=work / "score")
    with zipfile.ZipFile(RunOutput.SCORING_OUTPUT.path_in(work / "out")) as archive:
        lines = archive.read(VERDICTS_NAME).decode("utf-8").splitlines()
    return {verdict.case_id: verdict for verdict in map(Verdict.model_validate_json, lines)}


def test_each_answer_s_reward_is_the_program_s_verdict_in_the_run(tmp_path: Path) -> None:
    # given the custom-program example, its program also writing a verdict per case, and a run of it
    env = open_environment(_telling_bundle(tmp_path), tmp_path / "environment")
    verdicts = _run_verdicts(env, tmp_path / "run")
    cases = list(iter_cases(env.cases_path))
    answers = _answers()

    # when the submission's answers are rewarded in one batch
    grading = [grading_fields(case, env.template, env.spec.criteria) for case in cases]
    rewards = program_reward(
        env, grading, [answers.get(case.id, "") for case in cases], workdir=tmp_path / "reward"
    )

    # then each is the run's verdict for that case
    assert grading[0] == {"template": None, "case_id": cases[0].id}
    assert rewards == [1.0 if verdicts[case.id].passed else 0.0 for case in cases]
    assert set(rewards) == {0.0, 1.0}


def test_several_completions_for_one_case_are_each_judged(tmp_path: Path) -> None:
    env = open_environment(_telling_bundle(tmp_path), tmp_path / "environment")
    case = next(iter_cases(env.cases_path))
    fields = grading_fields(case, None, [])
    wrong = next(label for label in ("billing", "shipping") if label != case.answer)
    completions = [case.answer, wrong, f"<think>it is {case.answer}</think>{case.answer}", "<think>it is"]

    rewards = program_reward(env, [fields] * 4, completions, workdir=tmp_path / "reward")

    # right, wrong, right after its reasoning, cut off inside it
    assert rewards == [1.0, 0.0, 1.0, 0.0]


def test_a_program_that_writes_no_verdicts_cannot_reward_an_answer(tmp_path: Path) -> None:
    # the shipped example's program writes its scores only
    env = open_environment(EXAMPLE / "bundle", tmp_path / "environment")
    case = next(iter_cases(env.cases_path))
    with pytest.raises(ScoringError, match="the scoring program writes no per-case verdicts"):
        program_reward(env, [grading_fields(case, None, [])], [case.answer], workdir=tmp_path / "reward")


def test_program_reward_refuses_what_is_not_a_program_scored_case(tmp_path: Path) -> None:
    env = open_environment(_telling_bundle(tmp_path), tmp_path / "environment")
    with pytest.raises(ValueError, match="grading fields of a case scored by its program"):
        program_reward(env, [{"template": "math", "answer": "4"}], ["4"], workdir=tmp_path / "reward")
    with pytest.raises(ValueError, match="2 completions for 1 rows"):
        program_reward(env, [{"template": None, "case_id": "x"}], ["a", "b"], workdir=tmp_path / "reward")
