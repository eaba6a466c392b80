"""Scoring end to end on small folder bundles: built-in templates and custom scoring programs."""

from __future__ import annotations

import json
import textwrap
import tracemalloc
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from benchgen.environment import Environment, open_environment
from benchgen.errors import ScoringError
from benchgen.ingest import ingest
from benchgen.scoring.engine import score_predictions

MATH_CASES = [
    {"id": "q1", "question": "1+1", "answer": "2", "difficulty": "easy"},
    {"id": "q2", "question": "2+2", "answer": "4", "difficulty": "easy"},
    {"id": "q3", "question": "30*40", "answer": "1200", "difficulty": "hard"},
    {"id": "q4", "question": "5-8", "answer": "-3", "difficulty": "hard"},
]
MATH_COLUMNS = """
      - {title: Accuracy, key: accuracy, index: 0}
      - {title: Exact match, key: exact_match, index: 1}
"""


def make_bundle(
    root: Path,
    cases: Sequence[Mapping[str, object]],
    *,
    template: str | None = "math",
    columns: str = MATH_COLUMNS,
    program: str | None = None,
    extra: str = "",
) -> Path:
    """A folder bundle: competition.yaml, reference/cases.jsonl and optionally scoring_program/."""
    (root / "reference").mkdir(parents=True)
    (root / "reference" / "cases.jsonl").write_text(
        "".join(json.dumps(case) + "\n" for case in cases), encoding="utf-8"
    )
    task = "reference_data: reference"
    if program is not None:
        (root / "scoring_program").mkdir()
        (root / "scoring_program" / "score.py").write_text(textwrap.dedent(program), encoding="utf-8")
        (root / "scoring_program" / "metadata.yaml").write_text(
            "command: python $program/score.py $input $output\n", encoding="utf-8"
        )
        task += "\n    scoring_program: scoring_program"
    header = f"template: {template}\n" if template else ""
    (root / "competition.yaml").write_text(
        f"version: 2\ntitle: Tiny bench\n{header}{extra}tasks:\n  - index: 0\n    {task}\n"
        f"phases:\n  - index: 0\n    tasks: [0]\n    execution_time_limit: 60\n"
        f"leaderboards:\n  - columns:{columns}",
        encoding="utf-8",
    )
    return root


def _env(tmp_path: Path, cases: Sequence[Mapping[str, object]], **options: object) -> Environment:
    bundle = make_bundle(tmp_path / "bundle", cases, **options)  # type: ignore[arg-type]
    return open_environment(bundle, tmp_path / "env")


def _prediction_output(tmp_path: Path, env: Environment, records: Sequence[Mapping[str, object]]) -> Path:
    submission = tmp_path / "predictions.json"
    submission.write_text(
        json.dumps({"predictions": records, "metadata": {"execution_time": 9}}), encoding="utf-8"
    )
    ingest(env, submission, tmp_path / "ingested", workdir=tmp_path / "ingest-work")
    return tmp_path / "ingested" / "prediction_output.zip"


def test_a_math_run_scores_against_the_leaderboard_columns(tmp_path: Path) -> None:
    env = _env(tmp_path, MATH_CASES, extra="criteria:\n  - {id: final-answer}\n  - {id: arithmetic}\n")
    records = [
        {"id": "q1", "prediction_text": "1+1 = 2\n#### 2"},
        {"id": "q2", "prediction_text": "The answer is 5."},
        {"id": "q3", "prediction_text": "Cevap: 1.200"},
    ]
    seen: list[int] = []
    report = score_predictions(
        env,
        _prediction_output(tmp_path, env, records),
        tmp_path / "out",
        workdir=tmp_path / "w",
        progress=seen.append,
    )
    assert report.metrics == {"accuracy": 0.5, "exact_match": 0.25}
    assert report.overall_score == 0.5
    assert report.other_metrics["answer_rate"] == 0.75
    assert report.other_metrics["duration"] == 9.0
    assert (report.total, report.passed, report.answered, report.has_verdicts) == (4, 2, 3, True)
    assert report.breakdowns["difficulty"]["hard"] == {"total": 2.0, "passed": 1.0, "rate": 0.5}
    assert seen[-1] == 4


def test_scores_json_lists_the_columns_first(tmp_path: Path) -> None:
    env = _env(tmp_path, MATH_CASES)
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "#### 2"}])
    score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")
    scores = json.loads((tmp_path / "out" / "scores.json").read_text(encoding="utf-8"))
    assert list(scores)[:2] == ["accuracy", "exact_match"]
    assert scores["accuracy"] == 0.25


def test_the_scoring_output_holds_one_verdict_per_case(tmp_path: Path) -> None:
    env = _env(tmp_path, MATH_CASES, extra="criteria:\n  - {id: final-answer}\n  - {id: arithmetic}\n")
    output = _prediction_output(tmp_path, env, [{"id": "q4", "prediction_text": "Final answer: −3"}])
    score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")
    with zipfile.ZipFile(tmp_path / "out" / "scoring_output.zip") as archive:
        assert archive.namelist() == ["scores.json", "verdicts.jsonl"]
        verdicts = [json.loads(line) for line in archive.read("verdicts.jsonl").decode().splitlines()]
    assert [v["case_id"] for v in verdicts] == ["q1", "q2", "q3", "q4"]
    assert verdicts[3]["passed"] is True
    # final-answer is the math template's to judge; arithmetic is not, and is recorded unjudged
    assert verdicts[3]["criteria"] == [
        {"id": "final-answer", "passed": True},
        {"id": "arithmetic", "passed": None},
    ]
    assert verdicts[0]["prediction"] is None


def test_detailed_results_are_written_beside_the_scores(tmp_path: Path) -> None:
    env = _env(tmp_path, MATH_CASES)
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "#### 2"}])
    score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")
    detailed = json.loads((tmp_path / "out" / "detailed_results.json").read_text(encoding="utf-8"))
    assert [case["case_id"] for case in detailed["cases"]] == ["q1", "q2", "q3", "q4"]
    assert "Tiny bench" in (tmp_path / "out" / "detailed_results.html").read_text(encoding="utf-8")


def test_a_column_the_template_does_not_report_fails_the_run_by_name(tmp_path: Path) -> None:
    columns = MATH_COLUMNS + "      - {title: BLEU, key: bleu, index: 2}\n"
    env = _env(tmp_path, MATH_CASES, columns=columns)
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "#### 2"}])
    with pytest.raises(
        ScoringError, match=r"^scores.json has no value for the leaderboard column\(s\) bleu "
    ):
        score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")


def test_a_computed_column_is_filled_from_its_indexes(tmp_path: Path) -> None:
    columns = MATH_COLUMNS + (
        "      - {title: Mean, key: mean, index: 2, computation: avg, computation_indexes: [0, 1]}\n"
    )
    env = _env(tmp_path, MATH_CASES, columns=columns)
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "#### 2.0"}])
    report = score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")
    assert report.metrics == {"accuracy": 0.25, "exact_match": 0.0, "mean": 0.125}


def test_a_qa_run_reports_squad_metrics(tmp_path: Path) -> None:
    cases = [
        {"id": "a", "question": "Who?", "context": "...", "answers": ["Denver Broncos"]},
        {"id": "b", "question": "When?", "context": "...", "answers": []},
    ]
    columns = "\n      - {title: F1, key: f1, index: 0}\n      - {title: EM, key: exact_match, index: 1}\n"
    env = _env(tmp_path, cases, template="qa", columns=columns)
    records: list[dict[str, object]] = [
        {"id": "a", "prediction_text": "the Broncos"},
        {"id": "b", "prediction_text": "1999", "no_answer_probability": 0.8},
    ]
    report = score_predictions(
        env, _prediction_output(tmp_path, env, records), tmp_path / "out", workdir=tmp_path / "w"
    )
    assert report.metrics["exact_match"] == 0.5
    assert report.metrics["f1"] == pytest.approx((2 / 3 + 1) / 2)
    assert report.other_metrics["no_answer_exact"] == 1.0


SCORING_PROGRAM = """
import json, os, sys
out = sys.argv[2]
preds = json.load(open(os.path.join(sys.argv[1], "res", "predictions.json")))["predictions"]
print("scored", len(preds))
with open(os.path.join(out, "scores.json"), "w") as f:
    json.dump({"accuracy": 0.75, "speed": 3}, f)
"""


def test_a_scoring_program_gives_the_scores_and_keeps_its_logs(tmp_path: Path) -> None:
    env = _env(
        tmp_path,
        MATH_CASES,
        template=None,
        columns="\n      - {title: Acc, key: accuracy, index: 0}\n",
        program=SCORING_PROGRAM,
    )
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "2"}])
    report = score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")
    assert (report.metrics, report.other_metrics, report.has_verdicts) == (
        {"accuracy": 0.75},
        {"speed": 3.0},
        False,
    )
    assert report.logs["stdout"].strip() == "scored 1"
    with zipfile.ZipFile(tmp_path / "out" / "scoring_output.zip") as archive:
        assert archive.read("logs/stdout.txt").decode().strip() == "scored 1"
        assert "scores.json" in archive.namelist()


CODABENCH_SCORES_PROGRAM = """
import json, os, sys
scores = {"accuracy": 0.5, "solved": True, "mean": 9, "notes": "ok", "per_class": {"cat": 1.0}}
json.dump(scores, open(os.path.join(sys.argv[2], "scores.json"), "w"))
"""

CODABENCH_COLUMNS = """
      - {title: Acc, key: accuracy, index: 0}
      - {title: Solved, key: solved, index: 1}
      - {title: F1, key: f1, index: 2}
      - {title: Mean, key: mean, index: 3, computation: avg, computation_indexes: [0, 1]}
      - {title: Sum, key: total, index: 4, computation: sum, computation_indexes: [0, 1]}
      - {title: Min, key: worst, index: 5, computation: min, computation_indexes: [0, 1]}
      - {title: Max, key: best, index: 6, computation: max, computation_indexes: [0, 1]}
      - {title: With F1, key: with_f1, index: 7, computation: avg, computation_indexes: [0, 2]}
"""


def test_program_scores_are_read_as_codabench_reads_them(tmp_path: Path) -> None:
    # given a program writing a boolean, a note, a nested mapping and a value for a computed column,
    # but nothing for the f1 column
    env = _env(
        tmp_path, MATH_CASES, template=None, columns=CODABENCH_COLUMNS, program=CODABENCH_SCORES_PROGRAM
    )
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "2"}])

    # when it is scored
    report = score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")

    # then the boolean counts as 1, the other keys are ignored, the computed columns come from the
    # columns they name, and f1 (and the average that needs it) stay empty
    assert report.metrics == {
        "accuracy": 0.5,
        "solved": 1.0,
        "mean": 0.75,
        "total": 1.5,
        "worst": 0.5,
        "best": 1.0,
    }
    assert (report.other_metrics, report.overall_score) == ({}, 0.5)
    detailed = json.loads((tmp_path / "out" / "detailed_results.json").read_text(encoding="utf-8"))
    assert [tile["key"] for tile in detailed["metrics"]] == [
        "accuracy",
        "solved",
        "mean",
        "total",
        "worst",
        "best",
    ]


def test_a_first_column_the_program_does_not_write_leaves_no_overall_score(tmp_path: Path) -> None:
    program = (
        "import json, os, sys\njson.dump({'speed': 2}, open(os.path.join(sys.argv[2], 'scores.json'), 'w'))\n"
    )
    columns = (
        "\n      - {title: Acc, key: accuracy, index: 0}\n      - {title: Speed, key: speed, index: 1}\n"
    )
    env = _env(tmp_path, MATH_CASES, template=None, columns=columns, program=program)
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "2"}])

    report = score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")

    assert (report.metrics, report.overall_score) == ({"speed": 2.0}, None)
    written = json.loads((tmp_path / "out" / "scores.json").read_text(encoding="utf-8"))
    assert written == {"speed": 2.0}


def test_a_column_value_that_is_no_number_fails_the_run_by_name(tmp_path: Path) -> None:
    program = """
    import json, os, sys
    json.dump({"accuracy": "high"}, open(os.path.join(sys.argv[2], "scores.json"), "w"))
    """
    columns = "\n      - {title: Acc, key: accuracy, index: 0}\n"
    env = _env(tmp_path, MATH_CASES, template=None, columns=columns, program=program)
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "2"}])

    with pytest.raises(ScoringError) as caught:
        score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")

    assert str(caught.value) == (
        "scores.json: the value of accuracy is 'high', not a number; write a number or a boolean"
    )


def test_a_failing_scoring_program_fails_with_the_end_of_its_stderr(tmp_path: Path) -> None:
    program = "import sys\nprint('loading', file=sys.stderr)\nraise SystemExit('reference file broken')\n"
    env = _env(
        tmp_path,
        MATH_CASES,
        template=None,
        columns="\n      - {title: Acc, key: accuracy, index: 0}\n",
        program=program,
    )
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "2"}])
    with pytest.raises(ScoringError) as caught:
        score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")
    assert str(caught.value) == "the scoring program exited with code 1:\nloading\nreference file broken"
    with zipfile.ZipFile(tmp_path / "out" / "scoring_output.zip") as archive:
        assert "reference file broken" in archive.read("logs/stderr.txt").decode()
    log = (tmp_path / "out" / "logs" / "scoring.log").read_text(encoding="utf-8")
    assert log.endswith("--- stderr ---\nloading\nreference file broken\n")


def test_verdicts_written_by_a_program_feed_the_detailed_results(tmp_path: Path) -> None:
    program = """
    import json, os, sys
    out = sys.argv[2]
    json.dump({"accuracy": 0.5}, open(os.path.join(out, "scores.json"), "w"))
    with open(os.path.join(out, "verdicts.jsonl"), "w") as f:
        for case_id, passed in (("q1", True), ("q2", False)):
            verdict = {"case_id": case_id, "gold": "2", "prediction": None}
            verdict.update(passed=passed, answered=passed)
            f.write(json.dumps(verdict) + "\\n")
    with open(os.path.join(out, "detailed_results.html"), "w") as f:
        f.write("<html>program page</html>")
    """
    env = _env(
        tmp_path,
        MATH_CASES,
        template=None,
        columns="\n      - {title: Acc, key: accuracy, index: 0}\n",
        program=program,
    )
    output = _prediction_output(tmp_path, env, [{"id": "q1", "prediction_text": "2"}])
    report = score_predictions(env, output, tmp_path / "out", workdir=tmp_path / "w")
    assert (report.has_verdicts, report.total, report.passed) == (True, 2, 1)
    detailed = json.loads((tmp_path / "out" / "detailed_results.json").read_text(encoding="utf-8"))
    assert [case["case_id"] for case in detailed["cases"]] == ["q1", "q2"]
    assert (tmp_path / "out" / "detailed_results.html").read_text(
        encoding="utf-8"
    ) == "<html>program page</html>"


def test_memory_stays_flat_while_ingesting_and_scoring_many_cases(tmp_path: Path) -> None:
    # given 10,000 cases and predictions of ~250 bytes each (holding them all would take well over 10 MB)
    count = 10_000
    cases = [{"id": f"q{i}", "question": "x" * 200, "answer": str(i)} for i in range(count)]
    env = _env(tmp_path, cases)
    submission = tmp_path / "predictions.jsonl"
    with submission.open("w", encoding="utf-8") as lines:
        for i in range(count):
            lines.write(json.dumps({"id": f"q{i}", "prediction_text": "y" * 200 + f" #### {i}"}) + "\n")
    del cases
    # when both steps run under the allocation tracer
    tracemalloc.start()
    ingest(env, submission, tmp_path / "ingested", workdir=tmp_path / "ingest-work")
    report = score_predictions(
        env, tmp_path / "ingested" / "prediction_output.zip", tmp_path / "out", workdir=tmp_path / "w"
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # then every case was judged while the peak stayed small
    assert (report.total, report.overall_score) == (count, 1.0)
    assert peak < 4 * 1024 * 1024


def test_a_code_run_applies_each_diff_and_runs_the_case_tests(tmp_path: Path) -> None:
    files = {
        "calc.py": "def add(a, b):\n    return a - b\n",
        "test_calc.py": "from calc import add\nassert add(2, 3) == 5\n",
    }
    cases = [
        {"id": f"c{i}", "question": "fix add", "files": files, "test_command": "python test_calc.py"}
        for i in (1, 2, 3)
    ]
    columns = "\n      - {title: Resolved, key: resolved_rate, index: 0}\n"
    env = _env(tmp_path, cases, template="code", columns=columns)
    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    diff += "-    return a - b\n+    return a + b\n"
    records = [
        {"id": "c1", "prediction_text": diff},
        {"id": "c2", "prediction_text": diff.replace("a + b", "a * b")},
        {"id": "c3", "prediction_text": "I would change the minus sign."},
    ]
    report = score_predictions(
        env, _prediction_output(tmp_path, env, records), tmp_path / "out", workdir=tmp_path / "w"
    )
    assert report.metrics == {"resolved_rate": pytest.approx(1 / 3)}
    assert report.other_metrics["patches_generated"] == 2.0
    assert report.other_metrics["patch_generated_rate"] == pytest.approx(2 / 3)
    assert report.other_metrics["total_tasks"] == 3.0


def test_a_routing_run_reports_cost_per_task(tmp_path: Path) -> None:
    costs = {"small": 0.01, "large": 0.1}
    cases = [{"id": "r1", "route": "small", "costs": costs}, {"id": "r2", "route": "large", "costs": costs}]
    columns = "\n      - {title: Acc, key: accuracy, index: 0}\n"
    columns += "      - {title: Cost, key: avg_cost_usd_per_task, index: 1}\n"
    env = _env(tmp_path, cases, template="routing", columns=columns)
    records = [{"id": "r1", "route": "small"}, {"id": "r2", "route": "small"}]
    report = score_predictions(
        env, _prediction_output(tmp_path, env, records), tmp_path / "out", workdir=tmp_path / "w"
    )
    assert report.metrics == {"accuracy": 0.5, "avg_cost_usd_per_task": pytest.approx(0.01)}
    assert report.breakdowns["route"]["large"]["passed"] == 0.0
