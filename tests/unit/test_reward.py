"""The environment's scoring as a reward: for every shipped example, each submission answer's reward is
the run's own verdict for that case, in BenchGen and in the standalone grader run where BenchGen is not."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchgen.environment import open_environment
from benchgen.inference.model import Model
from benchgen.ingest import ingest
from benchgen.outputs import RunOutput
from benchgen.scoring import ScoringOptions, registry
from benchgen.scoring.engine import score_predictions
from benchgen.scoring.grader import JUDGE_URL
from benchgen.scoring.join import iter_cases
from benchgen.scoring.reward import grader_source, grading_fields, reward
from benchgen.verdicts import VERDICTS_NAME, Verdict
from benchgen.vocabulary import TemplateName
from localcloud.model_server import ExampleModelServer
from tests.judged import NO_RETRY, SimulatedJudge, judge_submission

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Every shipped example judged by a built-in template: a bundle with cases and one results file.
TEMPLATED = sorted(
    path.parent.parent.name
    for path in EXAMPLES.glob("*/submission/predictions.json*")
    if (path.parent.parent / "bundle" / "reference" / "cases.jsonl").is_file()
    and path.parent.parent.name != "custom-program"
)
# The standalone grader reads the completion, judges it and prints its reward, in an interpreter that
# sees nothing but the grader's folder.
_RUN_GRADER = """
import importlib.util, json, sys
for name in ("benchgen", "pydantic", "msgspec"):
    assert importlib.util.find_spec(name) is None, f"{name} is importable"
import grader
rows = json.load(sys.stdin)
print(json.dumps([grader.score(fields, completion) for fields, completion in rows]))
assert not [name for name in sys.modules if name.split(".")[0] in ("benchgen", "pydantic", "msgspec")]
"""


@dataclass(frozen=True)
class Judged:
    """One case of an example: its grading fields, the submission's answer as a completion, and the
    run's verdict."""

    case_id: str
    fields: dict[str, Any]
    completion: str
    verdict: Verdict


def _submitted(path: Path) -> dict[str, dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    records = (
        json.loads(text)["predictions"] if path.suffix == ".json" else map(json.loads, text.splitlines())
    )
    return {str(record["id"]): record for record in records}


def _completion(template: TemplateName, record: dict[str, Any] | None) -> str:
    """What the model answered, as a completion: the route it chose, nothing where it abstained."""
    if record is None:
        return ""
    if template == "routing" and record.get("route"):
        return str(record["route"])
    if (record.get("no_answer_probability") or 0.0) > 0.5:
        return ""
    return str(record.get("prediction_text", ""))


def _verdicts(out: Path) -> dict[str, Verdict]:
    with zipfile.ZipFile(RunOutput.SCORING_OUTPUT.path_in(out)) as archive:
        lines = archive.read(VERDICTS_NAME).decode("utf-8").splitlines()
    return {verdict.case_id: verdict for verdict in map(Verdict.model_validate_json, lines)}


@dataclass(frozen=True)
class Example:
    """An example's cases, judged by its run; ``options`` are how the run configured its judge, and
    ``judge`` the model that judged its answers, for a template that grades with one."""

    options: ScoringOptions
    cases: list[Judged]
    judge: Model | None = None


def _run(name: str, work: Path) -> Example:
    bundle = EXAMPLES / name / "bundle"
    submission = next((EXAMPLES / name / "submission").glob("predictions.json*"))
    env = open_environment(bundle, work / "environment")
    out = work / "out"
    ingested = ingest(env, submission, out, workdir=work / "ingest")
    template = env.template
    assert template is not None
    judge = SimulatedJudge() if registry.template(template).asks is not None else None
    judgments = None
    if judge is not None:
        judgments = work / "judgments.jsonl"
        judge_submission(env, submission, judgments, judge)
    score_predictions(env, ingested.prediction_output, out, workdir=work / "score", judgments=judgments)
    verdicts = _verdicts(out)
    predictions = _submitted(submission)
    judged = [
        Judged(
            case.id,
            grading_fields(case, template, env.spec.criteria, env.spec.judge),
            _completion(template, predictions.get(case.id)),
            verdicts[case.id],
        )
        for case in iter_cases(env.cases_path, registry.template(template).case_type)
    ]
    return Example(ScoringOptions(runtime=env.runtime.runtime), judged, judge)


@pytest.fixture(scope="module", params=TEMPLATED)
def example(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Example:
    return _run(request.param, tmp_path_factory.mktemp(request.param))


def _standalone(
    rows: Sequence[tuple[dict[str, Any], str | None]], folder: Path, judge_url: str | None = None
) -> list[float]:
    folder.mkdir(exist_ok=True)
    (folder / "grader.py").write_text(grader_source(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(folder)!r})\n{_RUN_GRADER}"],
        input=json.dumps(rows),
        capture_output=True,
        text=True,
        check=False,
        cwd=folder,
        env={JUDGE_URL: judge_url} if judge_url is not None else {},
    )
    assert done.returncode == 0, done.stderr
    return [float(value) for value in json.loads(done.stdout)]


def test_the_examples_cover_every_template() -> None:
    assert {"gsm8k-en", "qa", "routing", "code", "judge"} <= set(TEMPLATED)


def test_each_answer_s_reward_is_the_run_s_verdict(example: Example) -> None:
    # given an example's cases, its submission's answers and the run's verdicts
    # when each answer is rewarded, the judge configured as the run's
    rewards = {
        each.case_id: reward(
            each.fields, each.completion, example.options, model=example.judge, backoff=NO_RETRY
        )
        for each in example.cases
    }

    # then each reward is the score the run gave that case: 1.0 passed, 0.0 failed, F1 for qa, the judge's
    # weighted rubric score for a judged case
    assert rewards == {each.case_id: each.verdict.score for each in example.cases}
    assert {each.verdict.passed for each in example.cases} == {True, False}, "the submission passes and fails"


def test_the_standalone_grader_gives_the_run_s_verdicts_without_benchgen(
    example: Example, tmp_path: Path
) -> None:
    # when the generated grader scores every answer in an interpreter that cannot import BenchGen (a judged
    # example's answers graded by the example model server's simulated judge, which judged its run)
    rows = [(each.fields, each.completion) for each in example.cases]
    if example.judge is None:
        scores = _standalone(rows, tmp_path / "box")
    else:
        with ExampleModelServer() as server:
            scores = _standalone(rows, tmp_path / "box", judge_url=server.base_url)

    # then it gives each case the run's own score
    assert scores == [each.verdict.score for each in example.cases]
