"""State machine task: create or reuse an evaluation's two live runs and start them."""

from __future__ import annotations

from typing import Any

from benchgen.aws.handlers import LambdaFunction, scratch
from benchgen.aws.wiring import Adapters
from benchgen.step_inputs import EvaluationInput
from benchgen.steps.evaluation import start

function = LambdaFunction("start_evaluation", counts=True)


@function.task(EvaluationInput, correlation="evaluation_id")
def handler(task: EvaluationInput, wired: Adapters) -> dict[str, Any]:
    with scratch() as workdir:
        answer = start(
            task.evaluation_id,
            evaluations=wired.evaluations,
            runs=wired.runs,
            store=wired.store,
            inference=wired.inference_starter,
            workdir=workdir,
        )
    function.count("EvaluationStarted")
    function.logger.info("evaluation runs started", extra=answer)
    return answer
