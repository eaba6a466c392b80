"""State machine task: compare an evaluation's two runs on the held-out cases (with the environment's judge
saying which answer is better, where its template asks one), write its report and record it Completed; or
record the pipeline's failure on it."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.providers.registry import model_for
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import EvaluationInput, Failure
from benchgen.steps.evaluation_compare import PairwiseJudging, compare, record_evaluation_failure

function = LambdaFunction("compare_evaluation", counts=True)


@function.task(EvaluationInput, correlation="evaluation_id")
def handler(task: EvaluationInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        compared = compare(
            task.evaluation_id,
            evaluations=wired.evaluations,
            runs=wired.runs,
            store=wired.store,
            workdir=workdir,
            judging=PairwiseJudging(
                environments=wired.environments,
                connections=wired.connections,
                model_for=model_for,
                backoff=wired.model_backoff,
                deadline=function.deadline(),
            ),
        )
    function.count("EvaluationCompared")
    function.logger.info("evaluation compared", extra={"verdict": compared.verdict.value})
    return compared.model_dump(mode="json")


@function.failure(correlation="evaluation_id")
def record_failure(failure: Failure, wired: Adapters) -> None:
    record_evaluation_failure(failure.id, failure.reason, evaluations=wired.evaluations)
