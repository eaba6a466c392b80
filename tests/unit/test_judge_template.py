"""The judge template: verdicts from the judgments a judging pass left, unjudged cases neither passed nor
failed anywhere downstream, the criteria's scores and reasons in the detailed results, and the bundles it
refuses."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path

import msgspec
import pytest
import yaml

from benchgen.admission import check_bundle
from benchgen.bundle.spec import Criterion
from benchgen.cases import Prediction
from benchgen.compare.pairwise import Preference, pairwise_prompt, parse_preference
from benchgen.environment import open_environment
from benchgen.errors import ScoringError
from benchgen.judging import JudgeAttempt, JudgeRecord, JudgeSettings
from benchgen.scoring import ScoringOptions, build_template
from benchgen.scoring.grader import score as grader_score
from benchgen.scoring.judge import ASKS, JudgeCase, RubricCriterion
from benchgen.verdicts import VerdictRecord
from cli.main import main
from examplegen import generate_environment
from examplegen.generate import generators
from localcloud.model_server import JUDGE_MODEL, ExampleModelServer, Fault
from tests.judged import SimulatedJudge, judge_submission

CASE = JudgeCase(
    id="c1",
    question="Why does ice float?",
    reference="It is less dense than water.",
    rubric=[
        RubricCriterion(id="accurate", description="States the cause.", weight=2.0),
        RubricCriterion(id="explains", description="Explains the mechanism.", scale=(1, 5), pass_at=3),
    ],
)
CRITERIA = [Criterion(id="accurate"), Criterion(id="explains")]
ANSWER = Prediction(id="c1", prediction_text="Ice is less dense than water.")
GOOD = json.dumps(
    {
        "criteria": [
            {"id": "accurate", "score": 1, "reason": "It names density."},
            {"id": "explains", "score": 2, "reason": "It gives no mechanism."},
        ]
    }
)
MALFORMED = "The answer is good. accurate: yes"
NAME = "judge"


def _attempt(text: str) -> JudgeAttempt:
    return JudgeAttempt(text=text, problem=ASKS.problem(CASE, text))


def _verdict(record: JudgeRecord | None, prediction: Prediction | None = ANSWER) -> VerdictRecord:
    judgments = {} if record is None else {record.id: record}
    judge = build_template(NAME, ScoringOptions(judgments=judgments)).judge
    return judge(CASE, prediction, CRITERIA)


def test_a_readable_judgment_marks_each_criterion_with_its_score_and_reason() -> None:
    # Given a judgment that meets "accurate" and scores "explains" 2 of 5 (below its pass_at 3)
    record = JudgeRecord(id="c1", attempts=[_attempt(GOOD)])

    # When the case is judged
    verdict = _verdict(record)

    # Then each criterion is passed or failed on its own score, and the case fails as a near miss
    # on its scale
    marks = [(m.id, m.passed, m.score, m.reason, m.scale) for m in verdict.criteria]
    assert marks == [
        ("accurate", True, 1, "It names density.", (0, 1)),
        ("explains", False, 2, "It gives no mechanism.", (1, 5)),
    ]
    assert (verdict.passed, verdict.near_miss, verdict.answered) == (False, True, True)
    assert verdict.score == pytest.approx((2 * 1.0 + 1 * 0.25) / 3)


def test_a_judgment_read_on_the_second_attempt_judges_the_case() -> None:
    # Given a judge whose first answer could not be read and whose second could
    record = JudgeRecord(id="c1", attempts=[_attempt(MALFORMED), _attempt(GOOD)])

    # When the case is judged
    verdict = _verdict(record)

    # Then it is judged on the second answer
    assert verdict.unjudged is msgspec.UNSET
    assert [m.score for m in verdict.criteria] == [1, 2]


def test_a_reasoning_judge_s_answer_is_read_after_its_reasoning_block() -> None:
    # Given a judge that reasons in a <think> block before its answer, and one cut off inside the block
    reasoned = JudgeRecord(id="c1", attempts=[_attempt(f"<think>\nIt names density: 1.\n</think>\n{GOOD}")])
    cut_off = _attempt('<think>\n{"criteria": []} would be wrong, so')

    # When the case is judged
    verdict = _verdict(reasoned)

    # Then the answer after the block is read, and the cut-off one cannot be, saying why
    assert [m.score for m in verdict.criteria] == [1, 2]
    assert cut_off.problem == "the reply ended inside its reasoning block, with no JSON object after it."


def test_twice_unreadable_leaves_the_case_unjudged_with_the_judge_s_text() -> None:
    # Given a judge whose two answers could not be read
    record = JudgeRecord(id="c1", attempts=[_attempt(MALFORMED), _attempt(MALFORMED + "!")])

    # When the case is judged
    verdict = _verdict(record)

    # Then it is unjudged: no criterion judged, the judge's last text kept, and why
    assert verdict.unjudged == (
        "the judge's answer could not be read after 2 attempts: the reply is not one JSON object."
    )
    assert verdict.detail == MALFORMED + "!"
    assert [m.passed for m in verdict.criteria] == [None, None]
    assert not verdict.passed and not verdict.near_miss


def test_a_judge_that_gave_no_answer_leaves_the_case_unjudged() -> None:
    verdict = _verdict(JudgeRecord(id="c1", error="timed out after 3 attempts"))

    assert verdict.unjudged == "the judge gave no answer: timed out after 3 attempts"


def test_an_empty_answer_fails_every_criterion_without_a_judgment() -> None:
    verdict = _verdict(None, Prediction(id="c1", prediction_text="  "))

    assert (verdict.passed, verdict.answered, verdict.unjudged) == (False, False, msgspec.UNSET)
    assert [m.passed for m in verdict.criteria] == [False, False]


def test_scoring_without_judgments_says_the_judging_pass_has_not_run() -> None:
    judge = build_template(NAME).judge

    with pytest.raises(ScoringError, match="the judging pass has not run"):
        judge(CASE, ANSWER, CRITERIA)


def test_the_aggregator_counts_an_unjudged_case_neither_as_a_pass_nor_as_a_fail() -> None:
    # Given one passed, one failed and one unjudged case
    passing = json.dumps(
        {
            "criteria": [
                {"id": "accurate", "score": 1, "reason": "Right."},
                {"id": "explains", "score": 5, "reason": "Full."},
            ]
        }
    )
    aggregator = build_template(NAME).new_aggregator()
    for record in (
        JudgeRecord(id="c1", attempts=[_attempt(passing)]),
        JudgeRecord(id="c1", attempts=[_attempt(GOOD)]),
        JudgeRecord(id="c1", error="no answer"),
    ):
        aggregator.add(_verdict(record), CASE, ANSWER)

    # When its scores are read
    scores = aggregator.scores()

    # Then accuracy and the mean score are over the two judged cases, and each criterion's rate too
    assert scores["accuracy"] == 0.5
    assert (scores["judged"], scores["unjudged"], scores["total"]) == (2.0, 1.0, 3.0)
    assert scores["mean_score"] == pytest.approx((1.0 + 0.75) / 2)
    rates = {name: counts["rate"] for name, counts in aggregator.breakdowns()["criterion"].items()}
    assert rates == {"accurate": 1.0, "explains": 0.5}


def test_nothing_judged_gives_no_score_rather_than_zero() -> None:
    # Given a run of which the judge could judge no case
    aggregator = build_template(NAME).new_aggregator()
    for _ in range(3):
        aggregator.add(_verdict(JudgeRecord(id="c1", error="no answer")), CASE, ANSWER)

    # When its scores are read
    scores = aggregator.scores()

    # Then accuracy and the mean score have no value, and the aggregator says why
    assert (scores["accuracy"], scores["mean_score"]) == (None, None)
    assert (scores["judged"], scores["unjudged"]) == (0.0, 3.0)
    assert aggregator.no_score() == "no score: nothing was judged"


def test_a_run_of_which_nothing_was_judged_writes_null_scores_with_the_reason(tmp_path: Path) -> None:
    # Given the judged example whose judge answers every case unreadably, twice
    made = generate_environment(NAME, tmp_path / "env", cases=4, seed=5)
    env = open_environment(made.bundle_dir, tmp_path / "opened")
    ids = [f"explain-{index:06d}" for index in range(4)]
    judgments = tmp_path / "judgments.jsonl"
    judge_submission(env, made.submission_path, judgments, SimulatedJudge({i: [MALFORMED] * 2 for i in ids}))

    # When the run is scored
    out = tmp_path / "run"
    argv = ["score", "--bundle", str(made.bundle_dir), "--submission", str(made.submission_path)]
    assert main([*argv, "--out", str(out), "--judgments", str(judgments)]) == 0

    # Then scores.json holds no accuracy and no mean score (null, not 0.0), and the report says why
    scores = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    assert (scores["accuracy"], scores["mean_score"], scores["unjudged"]) == (None, None, 4.0)
    detailed = json.loads((out / "detailed_results.json").read_text(encoding="utf-8"))
    assert detailed["no_score"] == "no score: nothing was judged"
    # and no dataset is named with a score it does not have
    assert not (out / "finetune_artifact.zip").exists() or "0.0%" not in _manifest_name(out)


def _manifest_name(out: Path) -> str:
    with zipfile.ZipFile(out / "finetune_artifact.zip") as archive:
        return str(json.loads(archive.read("manifest.json"))["name"])


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The judged example scored through the command line, one case's judge answering twice unreadably."""
    tmp = tmp_path_factory.mktemp("judged")
    made = generate_environment(NAME, tmp / "env", cases=12, seed=5)
    env = open_environment(made.bundle_dir, tmp / "opened")
    unreadable = "explain-000003"
    judge = SimulatedJudge(instead={unreadable: [MALFORMED, MALFORMED]})
    judgments = tmp / "judgments.jsonl"
    judge_submission(env, made.submission_path, judgments, judge)
    out = tmp / "run"
    argv = ["score", "--bundle", str(made.bundle_dir), "--submission", str(made.submission_path)]
    assert main([*argv, "--out", str(out), "--judgments", str(judgments)]) == 0
    return out, unreadable


def test_the_detailed_results_show_each_criterion_s_score_and_reason(judged_run: tuple[Path, str]) -> None:
    out, unreadable = judged_run
    detailed = json.loads((out / "detailed_results.json").read_text(encoding="utf-8"))
    cases = {case["case_id"]: case for case in detailed["cases"]}

    judged = cases["explain-000000"]
    assert [c["id"] for c in judged["criteria"]] == ["accurate", "explains", "concise"]
    assert all(isinstance(c["score"], int) and c["reason"] for c in judged["criteria"])
    assert {c["id"]: c["scale"] for c in judged["criteria"]} == {
        "accurate": [0, 1],
        "explains": [1, 5],
        "concise": [0, 1],
    }
    assert cases[unreadable]["unjudged"].startswith("the judge's answer could not be read after 2 attempts")
    assert cases[unreadable]["detail"] == MALFORMED
    assert detailed["summary"]["unjudged"] == 1
    assert detailed["summary"]["passed"] + detailed["summary"]["failed"] == 11


def test_an_unjudged_case_is_never_in_the_finetune_artifact(judged_run: tuple[Path, str]) -> None:
    out, unreadable = judged_run
    with zipfile.ZipFile(out / "finetune_artifact.zip") as archive:
        text = "".join(
            archive.read(name).decode("utf-8") for name in archive.namelist() if name.endswith(".jsonl")
        )
    scores = json.loads((out / "scores.json").read_text(encoding="utf-8"))

    assert scores["unjudged"] == 1.0
    assert unreadable not in text
    assert "explain-000001" in text or "explain-000002" in text


def _bundle(tmp_path: Path, **changes: object) -> Path:
    made = generate_environment(NAME, tmp_path / "env", cases=3, seed=1)
    path = made.bundle_dir / "competition.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            document.pop(key)
        else:
            document[key] = value
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return made.bundle_dir


def test_a_judged_bundle_without_a_judge_section_is_refused(tmp_path: Path) -> None:
    problems = check_bundle(_bundle(tmp_path, judge=None))

    assert any("grades every answer with a judge model; add a judge: section" in p for p in problems), (
        problems
    )


def test_a_judging_prompt_that_leaves_out_the_answer_is_refused(tmp_path: Path) -> None:
    judge = {"connection": "example-models", "prompt": "Grade this against {rubric}."}

    problems = check_bundle(_bundle(tmp_path, judge=judge))

    assert any("judge.prompt: the judging prompt must name {answer}" in p for p in problems)


def test_the_standalone_grader_refuses_a_judged_case() -> None:
    with pytest.raises(ValueError, match="this grader scores math, qa, routing, code"):
        grader_score({"template": NAME, "rubric": []}, "an answer")


def test_the_example_judge_answers_a_fault_s_text_in_place_of_its_grading() -> None:
    # Given the example model server, told to answer one case's judging prompt with a malformed text
    generator = generators()[NAME]
    record, prediction = generator.make_case(random.Random(0), 0, False)
    case = msgspec.convert(record, JudgeCase)
    settings = JudgeSettings.model_validate(generator.competition()["judge"])
    prompt = ASKS.prompt(case, prediction["prediction_text"], settings)
    body = {"model": JUDGE_MODEL, "messages": [{"role": "user", "content": prompt}]}
    with ExampleModelServer() as server:
        server.faults.add(Fault(case_id=case.id, text=MALFORMED))

        # When it is asked twice
        first = server.completion(body)[1]["choices"][0]["message"]["content"]
        second = server.completion(body)[1]["choices"][0]["message"]["content"]

    # Then the first answer is the fault's text and the second the simulated judge's readable grading
    assert first == MALFORMED
    assert ASKS.problem(case, second) is None


def test_the_example_judge_agrees_with_the_calibration_labels_often_but_not_always(tmp_path: Path) -> None:
    # Given the judged example's calibration set, its labels made with each answer
    made = generate_environment(NAME, tmp_path / "env", cases=3, seed=1)
    competition = yaml.safe_load((made.bundle_dir / "competition.yaml").read_text(encoding="utf-8"))
    settings = JudgeSettings.model_validate(competition["judge"])
    assert settings.calibration is not None
    lines = (made.bundle_dir / settings.calibration).read_text(encoding="utf-8").splitlines()

    # When the simulated judge grades every answer
    agreed: dict[str, list[bool]] = {}
    judge = SimulatedJudge()
    for line in lines:
        item = json.loads(line)
        labels, answer = item.pop("labels"), item.pop("answer")
        case = msgspec.convert(item, JudgeCase)
        for score in json.loads(judge.complete(ASKS.prompt(case, answer, settings)).text)["criteria"]:
            agreed.setdefault(score["id"], []).append(score["score"] == labels[score["id"]])

    # Then its agreement with the people's labels is measurable on every criterion, and below 1 on each
    rates = {name: sum(found) / len(found) for name, found in agreed.items()}
    assert set(rates) == {"accurate", "explains", "concise"}
    assert all(0.5 < rate < 1.0 for rate in rates.values()), rates


def _better(judge: SimulatedJudge, case: JudgeCase, first: str, second: str) -> str:
    """Which answer the judge says is better, ``first`` shown as A."""
    preference = parse_preference(judge.complete(pairwise_prompt(case, first, second)).text)
    assert isinstance(preference, Preference), preference
    return preference.better


def test_the_example_judge_prefers_the_answer_its_rules_score_higher_in_either_order() -> None:
    # Given a judged example's case, a right answer to it and a wrong one
    generator = generators()[NAME]
    record, right = generator.make_case(random.Random(0), 0, False)
    _, wrong = generator.make_case(random.Random(0), 0, True)
    case = msgspec.convert(record, JudgeCase)
    good, bad = right["prediction_text"], wrong["prediction_text"]
    judge = SimulatedJudge()

    # When the simulated judge is asked which is better, each shown first in turn, and about one answer twice
    said = [
        _better(judge, case, good, bad),
        _better(judge, case, bad, good),
        _better(judge, case, good, good),
    ]

    # Then it prefers the right answer wherever it is shown, and calls the same answer twice a tie
    assert said == ["A", "B", "tie"]
