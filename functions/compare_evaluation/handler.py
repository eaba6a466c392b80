"""State machine task: compare an evaluation's two runs on the held-out cases and write its report."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.tables.evaluations import compare_answer
from benchgen.aws.wiring import Adapters
from benchgen.steps.evaluation import compare
from benchgen.tasks import EvaluationTask

function = LambdaFunction("compare_evaluation", counts=True)


@function.task(EvaluationTask, correlation="evaluation_id")
def handler(task: EvaluationTask, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        compared = compare(
            task.evaluation_id,
            evaluations=wired.evaluations,
            runs=wired.runs,
            store=wired.store,
            workdir=workdir,
        )
    function.count("EvaluationCompared")
    function.logger.info("evaluation compared", extra={"verdict": compared.verdict.value})
    return compare_answer(compared)
