"""A reasoning model's run: every built-in template judges the answer after the reasoning block, a
completion cut off inside its block is unanswered (the judge template's too, whatever a judgment said), and
the verdicts keep the reasoning apart."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from benchgen.environment import open_environment
from benchgen.ingest import ingest
from benchgen.judging import JudgeAttempt, JudgeRecord, write_judgments
from benchgen.scoring.engine import score_predictions
from tests.unit.test_score import make_bundle

ROUTING_COLUMNS = "\n      - {title: Accuracy, key: accuracy, index: 0}\n"
QA_COLUMNS = "\n      - {title: EM, key: exact_match, index: 0}\n"
CODE_COLUMNS = "\n      - {title: Resolved, key: resolved_rate, index: 0}\n"
JUDGE_COLUMNS = "\n      - {title: Accuracy, key: accuracy, index: 0}\n"
JUDGE_SECTION = "judge: {connection: conn-judge, model_id: judge-model}\n"
# What the judging pass's judge said of the case's answer: every criterion met.
JUDGMENT = JudgeRecord(
    id="c1",
    attempts=[JudgeAttempt(text=json.dumps({"criteria": [{"id": "right", "score": 1, "reason": "Yes."}]}))],
)


def _diff(value: int) -> str:
    return f"--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = {value}\n"


# Per template: its columns, one case, the right answer, and a wrong one the reasoning considers first.
TEMPLATES: dict[str, tuple[str | None, dict[str, Any], str, str]] = {
    "math": (None, {"id": "c1", "question": "6*7", "answer": "42"}, "The answer is 42.", "#### 41"),
    "qa": (
        QA_COLUMNS,
        {"id": "c1", "question": "Capital?", "context": "Paris is the capital.", "answers": ["Paris"]},
        "Paris",
        "Lyon",
    ),
    "routing": (ROUTING_COLUMNS, {"id": "c1", "question": "2+2", "route": "small"}, "small", "large"),
    "code": (
        CODE_COLUMNS,
        {
            "id": "c1",
            "question": "Make x 2",
            "files": {"calc.py": "x = 1\n"},
            "test_command": 'python -c "import calc; assert calc.x == 2"',
        },
        _diff(2),
        _diff(3),
    ),
    # judged by the judging pass's judgment of the answer, which meets the rubric
    "judge": (
        JUDGE_COLUMNS,
        {"id": "c1", "question": "Capital?", "rubric": [{"id": "right", "description": "Names Paris."}]},
        "Paris",
        "Lyon",
    ),
}


def _score(
    tmp_path: Path,
    template: str,
    records: Sequence[Mapping[str, object]],
    case: Mapping[str, Any] | None = None,
) -> tuple[Any, list[Any]]:
    """Score ``records`` on a bundle of the template holding one case (the template's own by default)."""
    columns, own, _, _ = TEMPLATES[template]
    case = own if case is None else case
    # code: the case's tests run in the smallest runtime
    options: dict[str, Any] = {"template": template, "extra": "runtime: minimal\n"}
    if columns is not None:
        options["columns"] = columns
    # judge: the judging pass's judgments, which it reads
    judgments = None
    if template == "judge":
        options["extra"] += JUDGE_SECTION
        judgments = tmp_path / "judgments.jsonl"
        write_judgments(judgments, [JUDGMENT])
    env = open_environment(make_bundle(tmp_path / "bundle", [case], **options), tmp_path / "env")
    submission = tmp_path / "predictions.json"
    submission.write_text(json.dumps({"predictions": records}), encoding="utf-8")
    ingest(env, submission, tmp_path / "ingested", workdir=tmp_path / "ingest-work")
    output = tmp_path / "ingested" / "prediction_output.zip"
    report = score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w", judgments=judgments)
    with zipfile.ZipFile(tmp_path / "out" / "scoring_output.zip") as archive:
        verdicts = [json.loads(line) for line in archive.read("verdicts.jsonl").splitlines()]
    return report, verdicts


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_the_answer_after_the_reasoning_is_judged_not_a_wrong_one_inside_it(
    tmp_path: Path, template: str
) -> None:
    # given: reasoning that weighs a wrong answer before the right one is given
    _, _, right, wrong = TEMPLATES[template]
    reasoning = f"First thought:\n{wrong}\nNo, check again."
    text = f"<think>\n{reasoning}\n</think>\n{right}"
    # when
    report, (verdict,) = _score(tmp_path, template, [{"id": "c1", "prediction_text": text}])
    # then: judged right, the whole text kept, the reasoning apart
    assert (verdict["passed"], verdict["answered"]) == (True, True), verdict["detail"]
    assert (report.passed, report.answered) == (1, 1)
    assert verdict["raw_prediction"] == text
    assert verdict["reasoning"] == reasoning
    cases = json.loads((tmp_path / "out" / "detailed_results.json").read_text(encoding="utf-8"))["cases"]
    assert cases[0]["reasoning_chars"] == len(reasoning)


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_a_completion_cut_off_inside_its_reasoning_is_unanswered(tmp_path: Path, template: str) -> None:
    # given: the right answer reached inside a block that never closes (the model ran out of tokens)
    _, _, right, _ = TEMPLATES[template]
    text = f"<think>\nIt must be\n{right}"
    # when
    report, (verdict,) = _score(tmp_path, template, [{"id": "c1", "prediction_text": text}])
    # then: no answer, so not passed, and not counted as an answer
    assert (verdict["passed"], verdict["answered"], verdict["prediction"]) == (False, False, None)
    assert verdict["score"] == 0.0
    assert verdict["detail"] == "cut off inside its reasoning block: no answer to judge"
    assert (report.passed, report.answered) == (0, 0)
    assert verdict["reasoning"] == f"It must be\n{right}".strip()


def test_an_unanswerable_qa_case_is_not_passed_by_a_completion_cut_off_while_reasoning(
    tmp_path: Path,
) -> None:
    # given: an unanswerable case, where an empty answer is the right abstention
    case = {"id": "c1", "question": "Capital?", "context": "Paris is big.", "answers": []}
    # when
    cut = _score(tmp_path / "a", "qa", [{"id": "c1", "prediction_text": "<think>Hmm"}], case)
    abstained = _score(tmp_path / "b", "qa", [{"id": "c1", "prediction_text": "", "reasoning": ""}], case)
    # then: the abstention (an empty reasoning field is none) passes; the cut-off completion has no
    # answer, abstention included
    assert abstained[1][0]["passed"] is True
    (verdict,) = cut[1]
    assert (verdict["passed"], verdict["answered"]) == (False, False)
    assert [mark["passed"] for mark in verdict["criteria"]] == [False] * len(verdict["criteria"])


def test_reasoning_given_apart_with_no_answer_is_unanswered(tmp_path: Path) -> None:
    # given: a provider's reasoning field and an empty answer
    records = [{"id": "c1", "prediction_text": "", "reasoning": "6*7 is 42, so 42."}]
    # when
    _, (verdict,) = _score(tmp_path, "math", records)
    # then
    assert (verdict["passed"], verdict["answered"]) == (False, False)
    assert verdict["detail"] == "only reasoning, no answer: nothing to judge"
    assert verdict["reasoning"] == "6*7 is 42, so 42."


def test_a_prediction_without_reasoning_leaves_no_reasoning_key(tmp_path: Path) -> None:
    _, (verdict,) = _score(tmp_path, "math", [{"id": "c1", "prediction_text": "#### 42"}])
    assert "reasoning" not in verdict
    cases = json.loads((tmp_path / "out" / "detailed_results.json").read_text(encoding="utf-8"))["cases"]
    assert "reasoning_chars" not in cases[0]
