"""Compare with the environment's judge: where the template asks a judge, the judge (a model of a connection
of the environment owner's) says which of the two models' answers to each held-out case is better."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import cast

import pytest

from benchgen.inference.model import Model
from benchgen.inference.retry import Backoff
from benchgen.judging import JudgeRequests
from benchgen.outputs import RunOutput
from benchgen.providers.checks import narrow
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import LiveModel
from benchgen.scoring import registry
from benchgen.scoring.templates import TemplateDefinition
from benchgen.steps import evaluation_compare
from benchgen.steps.evaluation import EvaluationError
from benchgen.steps.evaluation_compare import PairwiseJudging, compare
from benchgen.vocabulary import ProviderKind, Sampling
from examplegen.writing import write_bundle_zip
from tests.fakes import MemoryConnections, MemoryEnvironments
from tests.unit.compare_inputs import scoring_output, verdict
from tests.unit.test_compare_pairwise import FakeJudge, said
from tests.unit.test_evaluation_steps import HELD_OUT, Evaluation, _compared_world

BUNDLE_KEY = "environments/gsm8k-tr/v1/bundle.zip"
OPENAI_COMPATIBLE = ProviderKind("openai-compatible")
JUDGE_SECTION = "judge: {connection: conn-judge, model_id: judge-70b, family: judgefam}\n"


def prefers_right(first: str, second: str, prompt: str) -> str:
    """A consistent judge: the answer 42 is better, wherever it is shown."""
    if (first == "42") == (second == "42"):
        return said("tie")
    return said("A" if first == "42" else "B")


def _bundle(root: Path, judge: str) -> bytes:
    folder = root / "bundle"
    (folder / "reference").mkdir(parents=True)
    cases = [{"id": case_id, "question": f"question of {case_id}", "answer": "42"} for case_id in HELD_OUT]
    (folder / "reference" / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    (folder / "competition.yaml").write_text(
        "version: 2\ntitle: Sums\ntemplate: math\n"
        "criteria:\n  - {id: final-answer, description: The final answer equals the gold value.}\n"
        "tasks:\n  - index: 0\n    reference_data: reference\n"
        "phases:\n  - index: 0\n    name: Main\n    tasks: [0]\n"
        "leaderboards:\n  - columns:\n      - {title: Accuracy, key: accuracy, index: 0}\n" + judge
    )
    return write_bundle_zip(folder, root / "bundle.zip").read_bytes()


class Judged:
    """An evaluation's world with its environment registered, its owner's judge connection, and a judge."""

    def __init__(self, root: Path, *, judge: str = JUDGE_SECTION, connection_owner: str = "alice") -> None:
        self.world: Evaluation = _compared_world(root)
        self.world.store.objects[BUNDLE_KEY] = _bundle(root, judge)
        self.environments = MemoryEnvironments(
            EnvironmentRecord(
                environment_id="gsm8k-tr",
                version="v1",
                status=EnvironmentStatus.REGISTERED,
                template="math",
                bundle_key=BUNDLE_KEY,
            )
        )
        self.environments.claim_owner(EnvironmentOwner(environment_id="gsm8k-tr", owner="alice"))
        self.connections = MemoryConnections(
            ConnectionRecord(
                connection_id="conn-judge",
                owner=connection_owner,
                name="judge",
                provider=OPENAI_COMPATIBLE,
                profile=narrow(OPENAI_COMPATIBLE, None),
                base_url="https://judge.example.com/v1",
            )
        )
        self.judge = FakeJudge(prefers_right, tokens=(50, 9))
        self.asked: list[tuple[LiveModel, Sampling]] = []

    def model_for(self, live: LiveModel, sampling: Sampling) -> Model:
        self.asked.append((live, sampling))
        return self.judge

    def compare(self, workdir: Path) -> dict[str, object]:
        compared = compare(
            "eval-1",
            evaluations=self.world.evaluations,
            runs=self.world.runs,
            store=self.world.store,
            workdir=workdir,
            judging=PairwiseJudging(
                environments=self.environments,
                connections=self.connections,
                model_for=self.model_for,
                backoff=Backoff(attempts=1, base_s=0.0, cap_s=0.0, throttled_s=0.0),
            ),
        )
        report: dict[str, object] = json.loads(self.world.store.objects[compared.report_key])
        return report


@pytest.fixture
def asks_a_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """The math template, as a template that asks a judge would be (the step reaches templates only
    through the registry)."""

    def asking(name: str) -> TemplateDefinition:
        return dataclasses.replace(registry.template(name), asks=cast(JudgeRequests, object()))

    monkeypatch.setattr(evaluation_compare, "template", asking)


@pytest.mark.usefixtures("asks_a_judge")
def test_compare_asks_the_environment_s_judge_about_each_held_out_pair_and_reports_it(tmp_path: Path) -> None:
    # Given both runs judged on the held-out cases (the trained model fixes c1 and c2), and a judge that
    # prefers the right answer wherever it is shown
    judged = Judged(tmp_path)

    # When the evaluation is compared
    report = judged.compare(tmp_path / "compare")

    # Then the report carries the judge's pairwise figures: two wins, two ties (both right, both wrong)
    pairwise = report["comparison"]["pairwise"]  # type: ignore[index]
    assert (pairwise["wins"], pairwise["losses"], pairwise["ties"], pairwise["unjudged"]) == (2, 0, 2, 0)
    assert pairwise["asked_pairs"] == len(HELD_OUT)
    assert pairwise["judge_use"] == {"answers": 8, "input_tokens": 400, "output_tokens": 72}
    # And the judge was the environment's, reached through its connection with the judge's sampling
    live, sampling = judged.asked[0]
    assert (live.connection_id, live.model_id, live.base_url) == (
        "conn-judge",
        "judge-70b",
        "https://judge.example.com/v1",
    )
    assert (sampling.temperature, sampling.max_tokens) == (0.0, 512)


def test_an_environment_whose_template_asks_no_judge_is_compared_without_asking_one(tmp_path: Path) -> None:
    # Given an environment of the math template, which asks no judge
    judged = Judged(tmp_path)

    # When the evaluation is compared with a judge at hand
    report = judged.compare(tmp_path / "compare")

    # Then no judge is asked and the report has no pairwise section
    assert judged.asked == []
    assert "pairwise" not in report["comparison"]  # type: ignore[operator]


@pytest.mark.usefixtures("asks_a_judge")
def test_a_judge_connection_not_of_the_environment_owner_s_is_refused(tmp_path: Path) -> None:
    # Given an environment whose judge: section names another user's connection
    judged = Judged(tmp_path, connection_owner="mallory")

    # When the evaluation is compared, then it fails saying whose connection the judge must be
    with pytest.raises(EvaluationError) as refused:
        judged.compare(tmp_path / "compare")
    assert str(refused.value) == (
        "the judge of environment gsm8k-tr: the judge: section names connection 'conn-judge', which is not "
        "a connection of the environment's owner, by name or id; the environment's owner has no connection: "
        "create one (POST /connections) with that name"
    )
    assert judged.asked == []


@pytest.mark.usefixtures("asks_a_judge")
def test_a_held_out_case_one_model_gave_no_answer_to_is_not_asked_and_is_listed(tmp_path: Path) -> None:
    # Given the base model gave no answer the grader could read to c4
    judged = Judged(tmp_path)
    evaluation = judged.world.evaluation()
    assert evaluation.base.run_id is not None
    base = judged.world.runs.runs[evaluation.base.run_id]
    verdicts = [verdict(case_id, case_id == "c3") for case_id in ("c1", "c2", "c3")]
    verdicts.append(verdict("c4", False, prediction=None))
    scoring_output(tmp_path / "base-silent.zip", verdicts)
    judged.world.store.objects[base.files[RunOutput.SCORING_OUTPUT]] = (
        tmp_path / "base-silent.zip"
    ).read_bytes()

    # When the evaluation is compared
    pairwise = judged.compare(tmp_path / "compare")["comparison"]["pairwise"]  # type: ignore[index]

    # Then the judge is asked about the other three pairs only, and c4 is listed apart
    assert (pairwise["asked_pairs"], pairwise["without_both_answers"]) == (3, ["c4"])
    assert len(judged.judge.prompts) == 6
