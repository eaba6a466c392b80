"""Judgments for a judged environment's tests, from the example generators' simulated judge (the rules the
example model server's ``example-judge`` answers with), asked through ``judge_one`` as a judging pass asks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from benchgen.environment import Environment
from benchgen.inference.judge_calls import judge_one
from benchgen.inference.model import Answer, ModelCallError
from benchgen.inference.retry import Backoff
from benchgen.judging import JudgeRecord, write_judgments
from benchgen.scoring import registry
from benchgen.scoring.join import iter_cases
from benchgen.submission import open_predictions
from examplegen.generate import judge_reply

NO_RETRY = Backoff(attempts=1, base_s=0.0, cap_s=0.0)


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
    """Judge every case's answer of ``submission`` with ``judge`` and write the records to ``path``."""
    assert env.template is not None and env.spec.judge is not None
    definition = registry.template(env.template)
    asks, settings = definition.asks, env.spec.judge
    assert asks is not None
    model = judge or SimulatedJudge()
    with open_predictions(submission) as stream:
        answers = {str(prediction.id): prediction.prediction_text for prediction in stream}
    records = []
    for case in iter_cases(env.cases_path, definition.case_type):
        answer = answers.get(case.id, "")

        def prompt(problem: str | None, case: object = case, answer: str = answer) -> str:
            return asks.prompt(case, answer, settings, problem)  # type: ignore[arg-type]

        def problem(text: str, case: object = case) -> str | None:
            return asks.problem(case, text)  # type: ignore[arg-type]

        records.append(judge_one(case.id, prompt, problem, model, NO_RETRY))
    write_judgments(path, records)
    return records
