"""Stand-ins for a judged environment's tests, in one place: the throwaway template registered as one that
asks a judge (its requests, its case type and how it reads the judge's records changed, its recipe's files
untouched), a judged example bundle with a human-labelled calibration set, and the example generators'
simulated judge (the rules the example model server's ``example-judge`` answers with), asked through
``judge_one`` as a judging pass asks."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import msgspec
import yaml

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.environment import Environment
from benchgen.inference.model import Answer, ModelCallError
from benchgen.inference.pacing import Budget, Pacer
from benchgen.inference.retry import Backoff
from benchgen.judging import JudgeRecord, JudgeSettings, write_judgments
from benchgen.scoring import registry
from benchgen.scoring.join import iter_cases
from benchgen.scoring.judge import ASKS, JudgeCase
from benchgen.scoring.templates import Judge, ScoringOptions, TemplateDefinition, case_verdict, judging
from benchgen.steps.judging import judge_cases
from benchgen.submission import open_predictions
from benchgen.verdicts import VerdictRecord
from examplegen import generate_environment
from examplegen.generate import judge_reply
from tests.throwaway import NAME, registered_template
from tests.throwaway import template as throwaway_template
from tests.throwaway.template import JUDGED, ColourCase

NO_RETRY = Backoff(attempts=1, base_s=0.0, cap_s=0.0)
UNJUDGED = "unjudged"
CALIBRATION = "judge/calibration.jsonl"
RUBRIC = [
    {"id": "correct", "description": "The answer is right."},
    {"id": "polite", "description": "The answer is polite.", "scale": [1, 5]},
]


@contextmanager
def asking_template(**changes: Any) -> Iterator[TemplateDefinition]:
    """The throwaway template registered the documented way, its definition given ``changes`` (the
    ``TemplateDefinition`` fields that make it ask a judge), while the block runs; as it was afterwards."""
    with registered_template() as definition:
        changed = dataclasses.replace(definition, **changes)
        throwaway_template.TEMPLATE = changed
        try:
            yield changed
        finally:
            throwaway_template.TEMPLATE = definition


class ColourJudge:
    """Asks the judge whether an answer names the flag's colours. A judge's answer can be read when it is
    not blank."""

    prompt_fields: tuple[str, ...] = ("question", "answer")

    def prompt(self, case: Case, answer: str, settings: JudgeSettings, problem: str | None = None) -> str:
        again = f" (Your last reply could not be read: {problem})" if problem else ""
        return f"Does the answer {answer!r} name every colour asked by {case.question!r}?{again}"

    def problem(self, case: Case, text: str) -> str | None:
        return None if text.strip() else "the reply is blank: say whether it names every colour"


def _colour_judge(options: ScoringOptions) -> Judge:
    """A case's verdict read from what the judging pass's judge said of its answer, never from the answer:
    it passes when the judge gave one, and its detail is the judge's text (so a test sees which judgments
    scoring read)."""
    judgments: Mapping[str, JudgeRecord] = options.judgments or {}

    def judge(
        case: ColourCase, prediction: Prediction | None, criteria: Sequence[Criterion]
    ) -> VerdictRecord:
        record = judgments.get(case.id)
        read = record.read if record is not None else None
        raw = prediction.prediction_text if prediction is not None else ""
        return case_verdict(
            case,
            criteria,
            gold=" ".join(case.colours),
            prediction=raw or None,
            raw_prediction=raw,
            passed=read is not None,
            answered=bool(raw),
            near_miss=False,
            score=1.0 if read is not None else 0.0,
            detail=read.text if read is not None else UNJUDGED,
            judged=(JUDGED, (read is not None, None)),
        )

    return judging(ColourCase, judge)


def colour_judged_template() -> AbstractContextManager[TemplateDefinition]:
    """The throwaway template asking a judge whether an answer names the flag's colours, its cases scored
    from the judge's records (``ScoringOptions.judgments``), registered while the block runs."""
    return asking_template(build=_colour_judge, asks=ColourJudge())


def rubric_judged_template(*, rubric_cases: bool = True) -> AbstractContextManager[TemplateDefinition]:
    """The throwaway template asking a judge with the rubric template's requests, registered while the
    block runs; its cases read as rubric cases (as calibration reads them) unless ``rubric_cases`` is
    false (its example's cases then score as the throwaway's)."""
    if rubric_cases:
        return asking_template(asks=ASKS, case_type=JudgeCase)
    return asking_template(asks=ASKS)


def labelled(index: int, correct: int, polite: int) -> dict[str, object]:
    """One labelled answer: ``answer-<index>``, with a person's scores of correct (0/1) and polite (1..5)."""
    return {
        "id": f"cal-{index}",
        "question": f"What is {index} + {index}?",
        "rubric": RUBRIC,
        "answer": f"answer-{index}",
        "labels": {"correct": correct, "polite": polite},
    }


def judged_bundle(
    out: Path, calibration: Sequence[dict[str, object]] | None, connection: str = "conn-judge"
) -> Path:
    """The throwaway example's bundle with a judge: section (model ``judge-model`` of ``connection``, by id
    or name) and, unless None, the calibration set; its folder."""
    bundle = generate_environment(NAME, out, cases=4, seed=3).bundle_dir
    competition = bundle / "competition.yaml"
    spec = yaml.safe_load(competition.read_text(encoding="utf-8"))
    spec["judge"] = {"connection": connection, "model_id": "judge-model"}
    if calibration is not None:
        spec["judge"]["calibration"] = CALIBRATION
        (bundle / "judge").mkdir()
        lines = "".join(json.dumps(line) + "\n" for line in calibration)
        (bundle / CALIBRATION).write_text(lines, encoding="utf-8")
    competition.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return bundle


def judgment(scores: dict[str, int]) -> str:
    """A judge's readable answer giving ``scores``."""
    return json.dumps({"criteria": [{"id": k, "score": v, "reason": "Because."} for k, v in scores.items()]})


class SimulatedJudge:
    """The simulated judge as a model; ``instead``: for a case id, the texts it answers in place of its
    rule's, one a call (then the rule again); ``fails``: case ids it gives no answer about."""

    def __init__(self, instead: Mapping[str, Sequence[str]] | None = None, fails: Sequence[str] = ()) -> None:
        self.instead = {case_id: list(texts) for case_id, texts in (instead or {}).items()}
        self.fails = set(fails)
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> Answer:
        self.prompts.append(prompt)
        reply = judge_reply(prompt)
        if reply is None:
            return Answer(text="I do not know the answer to this question.", raw="")
        case_id, text = reply
        if case_id in self.fails:
            raise ModelCallError("the judge timed out", retryable=False)
        waiting = self.instead.get(case_id)
        return Answer(text=waiting.pop(0) if waiting else text, raw="", input_tokens=len(prompt.split()))


def judge_submission(
    env: Environment, submission: Path, path: Path, judge: SimulatedJudge | None = None
) -> list[JudgeRecord]:
    """Judge every case's answer of ``submission`` with ``judge`` as a judging pass's shard does, and write
    the records to ``path``."""
    assert env.template is not None and env.spec.judge is not None
    definition = registry.template(env.template)
    assert definition.asks is not None
    with open_predictions(submission) as stream:
        answers = {str(prediction.id): prediction.prediction_text for prediction in stream}
    lines = [
        {"case": msgspec.to_builtins(case), "answer": answers.get(case.id)}
        for case in iter_cases(env.cases_path, definition.case_type)
    ]
    records = judge_cases(
        lines,
        kind=definition.case_type,
        asks=definition.asks,
        settings=env.spec.judge,
        model=judge or SimulatedJudge(),
        backoff=NO_RETRY,
        pacer=Pacer(Budget(in_flight=1)),
        in_flight=1,
    )
    write_judgments(path, records)
    return records
